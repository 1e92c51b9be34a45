// MaxPool, AvgPool and GlobalAvgPool as ONNX's MaxPool, AveragePool and GlobalAveragePool.

#include "inference/onnx_registry.h"

namespace lockstep::inference {
namespace {

onnx::NodeProto* WriteWindow(OnnxWriter& w, const Node& node, const std::string& op_type) {
  onnx::NodeProto* out = w.AddNode(node, op_type, w.InputNames(node), node.output());
  SetInts(out, "kernel_shape", node.attrs.GetInts("kernel"));
  SetInts(out, "strides", node.attrs.GetInts("stride"));
  SetInts(out, "pads", OnnxPads(node.attrs));
  return out;
}

absl::Status WriteMaxPool(OnnxWriter& w, const Node& node) {
  WriteWindow(w, node, "MaxPool");
  return absl::OkStatus();
}

absl::Status WriteAvgPool(OnnxWriter& w, const Node& node) {
  SetInt(WriteWindow(w, node, "AveragePool"), "count_include_pad",
         node.attrs.GetBool("count_include_pad"));
  return absl::OkStatus();
}

REGISTER_ONNX("MaxPool", WriteMaxPool);
REGISTER_ONNX("AvgPool", WriteAvgPool);
REGISTER_ONNX("GlobalAvgPool", WriteAs("GlobalAveragePool"));

}  // namespace
}  // namespace lockstep::inference
