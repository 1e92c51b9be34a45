// Add and Relu as ONNX's ops of the same names; BiasAdd as the bias of the Conv or Gemm it alone
// reads, or else as an Add.

#include "absl/strings/str_cat.h"
#include "inference/onnx_registry.h"

namespace lockstep::inference {
namespace {

absl::Status WriteBiasAdd(OnnxWriter& w, const Node& node) {
  if (w.JoinBias(node)) return absl::OkStatus();
  // ONNX broadcasts from the last dimension: a (C) bias over (N, C, H, W) needs (C, 1, 1).
  const Node& bias = *node.inputs[1]->producer;
  Shape dims = {node.inputs[1]->shape()[0]};
  dims.resize(node.output()->shape().size() - 1, 1);
  const std::string name = absl::StrCat(bias.name, ":", dims.size(), "d");
  w.AddInitializer(name, bias, dims);
  w.AddNode(node, "Add", {w.Name(node.inputs[0]), name}, node.output());
  return absl::OkStatus();
}

REGISTER_ONNX("BiasAdd", WriteBiasAdd);
REGISTER_ONNX("Add", WriteAs("Add"));
REGISTER_ONNX("Relu", WriteAs("Relu"));

}  // namespace
}  // namespace lockstep::inference
