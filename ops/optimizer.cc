// Momentum: the SGD-with-momentum update, written in place into the parameter and its moment.
// Accumulate: gradient accumulation over micro-batches, in place into the accumulator.
// AllFinite and UpdateLossScale: dynamic loss scaling (train/passes/apply_optimizer.h).

#include "absl/strings/str_join.h"
#include "graph/op_registry.h"

namespace lockstep {
namespace {

const TensorType kF32Scalar{{}, DType::kF32};

// ((param, grad, moment) x N, lr [] [, loss_scale [], finite []]) -> ((param', moment') x N).
absl::StatusOr<std::vector<TensorType>> InferMomentum(const InferContext& ctx) {
  const size_t count = ctx.inputs.size();
  // One or more triples, then lr, or lr, loss_scale and finite.
  const size_t scalars = count % 3 == 1 ? 1 : 3;
  if (count < 4 || (count % 3 != 1 && count % 3 != 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expects (param, grad, moment) for each tensor, then lr or lr, loss_scale, finite; got ",
        count, " inputs"));
  }
  const size_t tensors = (count - scalars) / 3;
  std::vector<TensorType> outputs;
  for (size_t t = 0; t < tensors; ++t) {
    const TensorType& param = ctx.inputs[3 * t];
    if (param.dtype != DType::kF32) {
      return absl::InvalidArgumentError(
          absl::StrCat("param ", t, " must be f32, got ", TypeToString(param)));
    }
    const char* names[] = {"param", "grad", "moment"};
    for (size_t i : {1, 2}) {
      if (ctx.inputs[3 * t + i] != param) {
        return absl::InvalidArgumentError(absl::StrCat(names[i], " must be ", TypeToString(param),
                                                       " like param ", t, ", got ",
                                                       TypeToString(ctx.inputs[3 * t + i])));
      }
    }
    outputs.push_back(param);
    outputs.push_back(param);
  }
  const char* scalar_names[] = {"lr", "loss_scale", "finite"};
  for (size_t i = 0; i < scalars; ++i) {
    if (ctx.inputs[3 * tensors + i] != kF32Scalar) {
      return absl::InvalidArgumentError(absl::StrCat(scalar_names[i], " must be f32[], got ",
                                                     TypeToString(ctx.inputs[3 * tensors + i])));
    }
  }
  if (ctx.attrs.GetFloat("loss_scale") <= 0.0) {
    return absl::InvalidArgumentError(
        absl::StrCat("loss_scale must be positive, got ", ctx.attrs.GetFloat("loss_scale")));
  }
  return outputs;
}

// g = grad / loss_scale + weight_decay * param; moment = momentum * moment + g;
// param -= lr * (nesterov ? g + momentum * moment : moment). As MindSpore and PyTorch.
// With the inputs loss_scale and finite (dynamic loss scaling), the gradient is divided by the
// attribute times the input, and nothing is written when finite is 0: the step is skipped.
// One node updates several tensors alike (those whose gradients one AllReduce bucket reduces),
// so that a device runs the update of a bucket as one launch.
REGISTER_OP("Momentum")
    .Inputs(kVariadic)
    .Outputs(kVariadic)
    .Attr("momentum", 0.9)
    .Attr("weight_decay", 0.0)
    .Attr("nesterov", false)
    .Attr("loss_scale", 1.0)
    .Infer(InferMomentum)
    .InPlace(0, 0)
    .InPlace(1, 2)
    .InPlaceRepeats(2, 3);

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

// (tensors...) -> finite f32[]: 1 when no element of any input is Inf or NaN, else 0.
absl::StatusOr<std::vector<TensorType>> InferAllFinite(const InferContext& ctx) {
  if (ctx.inputs.empty()) return absl::InvalidArgumentError("expects at least one input");
  for (const TensorType& input : ctx.inputs) {
    if (input.dtype != DType::kF32) {
      return absl::InvalidArgumentError(
          absl::StrCat("inputs must be f32, got ", TypeToString(input)));
    }
  }
  return std::vector<TensorType>{kF32Scalar};
}

REGISTER_OP("AllFinite").Inputs(kVariadic).Infer(InferAllFinite);

// (loss_scale f32[], good_steps i32[], finite f32[]) -> (loss_scale', good_steps'), in place.
// MindSpore's DynamicLossScaleUpdateCell: on overflow the scale is divided by `factor` (not
// below 1) and the count of good steps restarts; after `window` good steps in a row it is
// multiplied by `factor` (while that stays finite).
absl::StatusOr<std::vector<TensorType>> InferUpdateLossScale(const InferContext& ctx) {
  const TensorType counter{{}, DType::kI32};
  if (ctx.inputs.size() != 3 || ctx.inputs[0] != kF32Scalar || ctx.inputs[1] != counter ||
      ctx.inputs[2] != kF32Scalar) {
    std::vector<std::string> got;
    for (const TensorType& input : ctx.inputs) got.push_back(TypeToString(input));
    return absl::InvalidArgumentError(
        absl::StrCat("expects (loss_scale f32[], good_steps i32[], finite f32[]), got (",
                     absl::StrJoin(got, ", "), ")"));
  }
  if (ctx.attrs.GetFloat("factor") <= 1.0 || ctx.attrs.GetInt("window") < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("factor must exceed 1 and window be at least 1, got ",
                     ctx.attrs.GetFloat("factor"), " and ", ctx.attrs.GetInt("window")));
  }
  return std::vector<TensorType>{ctx.inputs[0], ctx.inputs[1]};
}

REGISTER_OP("UpdateLossScale")
    .Inputs(3)
    .Outputs(2)
    .Attr("factor", 2.0)
    .Attr("window", int64_t{2000})
    .Infer(InferUpdateLossScale)
    .InPlace(0, 0)
    .InPlace(1, 1);

}  // namespace
}  // namespace lockstep
