// Momentum: the SGD-with-momentum update, written in place into the parameter and its moment.
// Accumulate: gradient accumulation over micro-batches, in place into the accumulator.

#include "graph/op_registry.h"

namespace lockstep {
namespace {

// (param, grad, moment, lr []) -> (param', moment').
absl::StatusOr<std::vector<TensorType>> InferMomentum(const InferContext& ctx) {
  const TensorType& param = ctx.inputs[0];
  if (param.dtype != DType::kF32) {
    return absl::InvalidArgumentError(absl::StrCat("param must be f32, got ", TypeToString(param)));
  }
  const char* names[] = {"param", "grad", "moment"};
  for (int i : {1, 2}) {
    if (ctx.inputs[i] != param) {
      return absl::InvalidArgumentError(absl::StrCat(names[i], " must be ", TypeToString(param),
                                                     " like param, got ",
                                                     TypeToString(ctx.inputs[i])));
    }
  }
  const TensorType scalar{{}, DType::kF32};
  if (ctx.inputs[3] != scalar) {
    return absl::InvalidArgumentError(
        absl::StrCat("lr must be f32[], got ", TypeToString(ctx.inputs[3])));
  }
  if (ctx.attrs.GetFloat("loss_scale") <= 0.0) {
    return absl::InvalidArgumentError(
        absl::StrCat("loss_scale must be positive, got ", ctx.attrs.GetFloat("loss_scale")));
  }
  return std::vector<TensorType>{param, param};
}

// g = grad / loss_scale + weight_decay * param; moment = momentum * moment + g;
// param -= lr * (nesterov ? g + momentum * moment : moment). As MindSpore and PyTorch.
REGISTER_OP("Momentum")
    .Inputs(4)
    .Outputs(2)
    .Attr("momentum", 0.9)
    .Attr("weight_decay", 0.0)
    .Attr("nesterov", false)
    .Attr("loss_scale", 1.0)
    .Infer(InferMomentum)
    .InPlace(0, 0)
    .InPlace(1, 2);

// (accum, grad, beta []) -> accum' = beta * accum + grad. beta is 0 on the first micro-batch
// of an update (the accumulator starts over without a separate zeroing pass) and 1 after.
absl::StatusOr<std::vector<TensorType>> InferAccumulate(const InferContext& ctx) {
  const TensorType& accum = ctx.inputs[0];
  const TensorType scalar{{}, accum.dtype};
  if (ctx.inputs[1] != accum || ctx.inputs[2] != scalar) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expects (accum, grad of the same type, beta ", TypeToString(scalar), "), got grad ",
        TypeToString(ctx.inputs[1]), " and beta ", TypeToString(ctx.inputs[2])));
  }
  return std::vector<TensorType>{accum};
}

REGISTER_OP("Accumulate").Inputs(3).Infer(InferAccumulate).InPlace(0, 0);

}  // namespace
}  // namespace lockstep
