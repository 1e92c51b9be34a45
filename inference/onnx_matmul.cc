// MatMul as ONNX's Gemm. A BiasAdd that alone reads it joins it as Gemm's C (onnx_elementwise.cc).

#include "inference/onnx_registry.h"

namespace lockstep::inference {
namespace {

absl::Status WriteMatMul(OnnxWriter& w, const Node& node) {
  if (node.attrs.GetBool("transpose_a")) return CannotExport(node, "transpose_a");
  onnx::NodeProto* out = w.AddNode(node, "Gemm", w.InputNames(node), node.output());
  SetInt(out, "transB", node.attrs.GetBool("transpose_b") ? 1 : 0);
  w.AcceptBias(node, out);
  return absl::OkStatus();
}

REGISTER_ONNX("MatMul", WriteMatMul);

}  // namespace
}  // namespace lockstep::inference
