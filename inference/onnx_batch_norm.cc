// BatchNormInference as ONNX's BatchNormalization (inputs x, scale, bias, mean, var, as ours).

#include "inference/onnx_registry.h"

namespace lockstep::inference {
namespace {

absl::Status WriteBatchNormInference(OnnxWriter& w, const Node& node) {
  SetFloat(w.AddNode(node, "BatchNormalization", w.InputNames(node), node.output()), "epsilon",
           node.attrs.GetFloat("epsilon"));
  return absl::OkStatus();
}

REGISTER_ONNX("BatchNormInference", WriteBatchNormInference);

}  // namespace
}  // namespace lockstep::inference
