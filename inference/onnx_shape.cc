// Flatten as ONNX's Flatten at axis 1: (N, ...) -> (N, product of the rest), as ours.

#include "inference/onnx_registry.h"

namespace lockstep::inference {
namespace {

absl::Status WriteFlatten(OnnxWriter& w, const Node& node) {
  SetInt(w.AddNode(node, "Flatten", w.InputNames(node), node.output()), "axis", 1);
  return absl::OkStatus();
}

REGISTER_ONNX("Flatten", WriteFlatten);

}  // namespace
}  // namespace lockstep::inference
