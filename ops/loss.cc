// Loss and metrics: SoftmaxCrossEntropy (sparse labels, mean over the batch) and its gradient,
// ArgMax and AccuracyCount.

#include "graph/builder.h"
#include "graph/op_registry.h"

namespace lockstep {
namespace {

// logits (N, C) f32 and labels (N) i32.
absl::Status CheckLogitsAndLabels(const TensorType& logits, const TensorType& labels) {
  if (logits.shape.size() != 2 || logits.dtype != DType::kF32) {
    return absl::InvalidArgumentError(
        absl::StrCat("logits must be f32 (N, C), got ", TypeToString(logits)));
  }
  const TensorType expected{{logits.shape[0]}, DType::kI32};
  if (labels != expected) {
    return absl::InvalidArgumentError(absl::StrCat("labels must be ", TypeToString(expected),
                                                   " to match logits ", TypeToString(logits),
                                                   ", got ", TypeToString(labels)));
  }
  return absl::OkStatus();
}

// (logits, labels) -> (loss [], probs (N, C)).
absl::StatusOr<std::vector<TensorType>> InferSoftmaxCrossEntropy(const InferContext& ctx) {
  LS_RETURN_IF_ERROR(CheckLogitsAndLabels(ctx.inputs[0], ctx.inputs[1]));
  return std::vector<TensorType>{{{}, DType::kF32}, ctx.inputs[0]};
}

// (probs, labels, dloss []) -> dlogits.
absl::StatusOr<std::vector<TensorType>> InferSoftmaxCrossEntropyGrad(const InferContext& ctx) {
  LS_RETURN_IF_ERROR(CheckLogitsAndLabels(ctx.inputs[0], ctx.inputs[1]));
  const TensorType scalar{{}, DType::kF32};
  if (ctx.inputs[2] != scalar) {
    return absl::InvalidArgumentError(
        absl::StrCat("dloss must be f32[], got ", TypeToString(ctx.inputs[2])));
  }
  return std::vector<TensorType>{ctx.inputs[0]};
}

absl::StatusOr<std::vector<TensorType>> InferArgMax(const InferContext& ctx) {
  const TensorType& x = ctx.inputs[0];
  if (x.shape.size() != 2 || ctx.attrs.GetInt("axis") != 1) {
    return absl::InvalidArgumentError(absl::StrCat("only axis 1 of a 2-D x is supported, got x ",
                                                   TypeToString(x), " and axis ",
                                                   ctx.attrs.GetInt("axis")));
  }
  return std::vector<TensorType>{{{x.shape[0]}, DType::kI32}};
}

absl::StatusOr<std::vector<TensorType>> InferAccuracyCount(const InferContext& ctx) {
  LS_RETURN_IF_ERROR(CheckLogitsAndLabels(ctx.inputs[0], ctx.inputs[1]));
  return std::vector<TensorType>{{{}, DType::kI32}};
}

// probs is saved for the backward and treated as a constant: only dloss flows back.
std::vector<Value*> SoftmaxCrossEntropyBackward(GradContext& g) {
  if (g.dy(0) == nullptr) return {nullptr, nullptr};
  return {g.builder.Op1("SoftmaxCrossEntropyGrad", {g.output(1), g.input(1), g.dy(0)}), nullptr};
}

// The loss, its softmax and the metrics declare no low precision: float32 at every amp level, as
// MindSpore casts the network's output to float32 before the loss.
REGISTER_OP("SoftmaxCrossEntropy")
    .Inputs(2)
    .Outputs(2)
    .Infer(InferSoftmaxCrossEntropy)
    .Grad(SoftmaxCrossEntropyBackward);
// dlogits = (probs - onehot(labels)) * dloss / N.
REGISTER_OP("SoftmaxCrossEntropyGrad").Inputs(3).Infer(InferSoftmaxCrossEntropyGrad);
// The first index of each row's maximum.
REGISTER_OP("ArgMax").Inputs(1).Attr("axis", int64_t{1}).Infer(InferArgMax);
// The number of rows whose ArgMax equals the label.
REGISTER_OP("AccuracyCount").Inputs(2).Infer(InferAccuracyCount);

}  // namespace
}  // namespace lockstep
