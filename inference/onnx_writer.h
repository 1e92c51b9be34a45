#pragma once

// The ONNX graph an export writes (inference/onnx_export.cc), as the translations of the op
// families (inference/onnx_<family>.cc, onnx_registry.h) see it: value names, nodes,
// initializers, and the bias that ONNX's Conv and Gemm take as an input.

#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "inference/inference_model.h"
#include "onnx/onnx_pb.h"

namespace lockstep::inference {

class OnnxWriter {
 public:
  OnnxWriter(const InferenceModel& model, onnx::GraphProto* graph);

  // Every node of the model's graph in order, each by its op's registered translation; a node
  // whose op has none fails naming it.
  absl::Status Write();

  // ONNX names: the graph's inputs and output by their names, other values by their node's
  // ("conv1/Conv2D_3", "...:1" for a second output).
  std::string Name(const Value* value) const;
  std::vector<std::string> InputNames(const Node& node) const;
  // An ONNX node named after `node`, writing `output`.
  onnx::NodeProto* AddNode(const Node& node, const std::string& op_type,
                           const std::vector<std::string>& inputs, const Value* output);
  // The weight that parameter or state input `input` holds, as an initializer `name` of `dims`.
  void AddInitializer(const std::string& name, const Node& input, const Shape& dims);

  // `out`, written for `node`, takes a bias as its last input (ONNX's Conv and Gemm): a BiasAdd
  // that alone reads the node's output may join it (JoinBias) instead of becoming an Add.
  void AcceptBias(const Node& node, onnx::NodeProto* out);
  // Whether the parameter bias of `bias_add` joined the ONNX node that writes its input: then
  // that node writes the BiasAdd's output, and the BiasAdd needs no node of its own.
  bool JoinBias(const Node& bias_add);

 private:
  void WriteInput(const Node& node);
  // (N, ...) with N the dynamic batch dimension "N".
  void AddValueInfo(onnx::ValueInfoProto* info, const std::string& name, const Shape& shape);

  const InferenceModel& model_;
  onnx::GraphProto* graph_;
  std::vector<std::vector<Node*>> consumers_;
  std::map<const Value*, onnx::NodeProto*> bias_takers_;  // by the value they write
};

// "cannot export <node> to ONNX: <why>"
absl::Status CannotExport(const Node& node, const std::string& why);

// Attributes of an ONNX node.
void SetInt(onnx::NodeProto* node, const std::string& name, int64_t value);
void SetInts(onnx::NodeProto* node, const std::string& name, const std::vector<int64_t>& values);
void SetFloat(onnx::NodeProto* node, const std::string& name, double value);
// Lockstep's symmetric [h, w] "padding" as ONNX's "pads" [top, left, bottom, right].
std::vector<int64_t> OnnxPads(const Attrs& attrs);

}  // namespace lockstep::inference
