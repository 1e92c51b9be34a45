// Batch normalization: BatchNorm (training, batch statistics plus running averages),
// BatchNormGrad, and BatchNormInference (running statistics, eval only). SyncBatchNorm and
// SyncBatchNormGrad are the same ops with statistics over every rank of a communication group
// ("group"); their kernels come with parallel/, which does the communication. BatchNormRelu and
// BatchNormReluGrad are BatchNorm followed by ReLU in one pass, made by the FuseKernels pass.

#include <algorithm>
#include <initializer_list>

#include "graph/builder.h"
#include "graph/fusion.h"
#include "graph/op_registry.h"

namespace lockstep {
namespace {

absl::Status CheckActivation(const TensorType& x) {
  if (x.shape.size() != 2 && x.shape.size() != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("x must be (N, C) or (N, C, H, W), got ", TypeToString(x)));
  }
  return absl::OkStatus();
}

// The dtype of the statistics (batch and running mean and variance): float32 for bf16 and f16
// data, else x's own.
DType StatisticsDType(const TensorType& x) {
  return IsLowPrecision(x.dtype) ? DType::kF32 : x.dtype;
}

// Inputs first, first + 1, ... (named in `names`) must be (C) vectors: statistics in
// StatisticsDType, parameters (scale and shift) in it or in x's dtype (mixed precision at O3).
absl::Status CheckChannelVectors(const InferContext& ctx, size_t first, bool parameters,
                                 std::initializer_list<const char*> names) {
  const TensorType& x = ctx.inputs[0];
  const TensorType expected{{x.shape[1]}, StatisticsDType(x)};
  size_t i = first;
  for (const char* name : names) {
    const TensorType& input = ctx.inputs[i++];
    if (input == expected || (parameters && input == TensorType{expected.shape, x.dtype})) {
      continue;
    }
    return absl::InvalidArgumentError(absl::StrCat(
        name, " must be ", TypeToString(expected),
        parameters && x.dtype != expected.dtype ? absl::StrCat(" or ", DTypeName(x.dtype)) : "",
        " for x ", TypeToString(x), ", got ", TypeToString(input)));
  }
  return absl::OkStatus();
}

// Same dtype for the scale and shift (gamma and beta).
absl::Status CheckSameParameterDType(const InferContext& ctx) {
  if (ctx.inputs[1].dtype == ctx.inputs[2].dtype) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("gamma ", TypeToString(ctx.inputs[1]),
                                                 " and beta ", TypeToString(ctx.inputs[2]),
                                                 " must have one dtype"));
}

TensorType ReluMaskType(const TensorType& x) { return {{NumElements(x.shape)}, DType::kU8}; }

// (x, gamma, beta, running_mean, running_var) -> (y, saved_mean, saved_var, running_mean',
// running_var'). bf16 or f16 x keeps float32 statistics, with gamma and beta in either dtype.
absl::StatusOr<std::vector<TensorType>> InferBatchNorm(const InferContext& ctx) {
  const TensorType& x = ctx.inputs[0];
  LS_RETURN_IF_ERROR(CheckActivation(x));
  LS_RETURN_IF_ERROR(CheckChannelVectors(ctx, 1, /*parameters=*/true, {"gamma", "beta"}));
  LS_RETURN_IF_ERROR(CheckSameParameterDType(ctx));
  LS_RETURN_IF_ERROR(
      CheckChannelVectors(ctx, 3, /*parameters=*/false, {"running_mean", "running_var"}));
  // The unbiased variance for the running average divides by (values per channel - 1).
  if (NumElements(x.shape) / x.shape[1] < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("training needs more than one value per channel, x is ", TypeToString(x)));
  }
  // The batch and running statistics are of the running statistics' dtype (float32 under mixed
  // precision, whatever x and gamma are).
  const TensorType statistics = ctx.inputs[3];
  return std::vector<TensorType>{x, statistics, statistics, statistics, statistics};
}

// (x, gamma, saved_mean, saved_var, dy) -> (dx, dgamma, dbeta): dx like x, dgamma and dbeta
// like gamma.
absl::StatusOr<std::vector<TensorType>> InferBatchNormGrad(const InferContext& ctx) {
  const TensorType& x = ctx.inputs[0];
  LS_RETURN_IF_ERROR(CheckActivation(x));
  LS_RETURN_IF_ERROR(CheckChannelVectors(ctx, 1, /*parameters=*/true, {"gamma"}));
  LS_RETURN_IF_ERROR(
      CheckChannelVectors(ctx, 2, /*parameters=*/false, {"saved_mean", "saved_var"}));
  if (ctx.inputs[4] != x) {
    return absl::InvalidArgumentError(
        absl::StrCat("dy must be ", TypeToString(x), " like x, got ", TypeToString(ctx.inputs[4])));
  }
  return std::vector<TensorType>{x, ctx.inputs[1], ctx.inputs[1]};
}

// As BatchNorm, plus the ReLU mask: opaque bytes the kernel writes for the backward, at most one
// per element of x.
absl::StatusOr<std::vector<TensorType>> InferBatchNormRelu(const InferContext& ctx) {
  LS_ASSIGN_OR_RETURN(std::vector<TensorType> outputs, InferBatchNorm(ctx));
  outputs.push_back(ReluMaskType(ctx.inputs[0]));
  return outputs;
}

// As BatchNormGrad, with dy the gradient of the ReLU's output and the forward's mask last.
absl::StatusOr<std::vector<TensorType>> InferBatchNormReluGrad(const InferContext& ctx) {
  LS_ASSIGN_OR_RETURN(std::vector<TensorType> outputs, InferBatchNormGrad(ctx));
  const TensorType expected = ReluMaskType(ctx.inputs[0]);
  if (ctx.inputs[5] != expected) {
    return absl::InvalidArgumentError(absl::StrCat("mask must be ", TypeToString(expected),
                                                   ", got ", TypeToString(ctx.inputs[5])));
  }
  return outputs;
}

// (x, gamma, beta, mean, var) -> y.
absl::StatusOr<std::vector<TensorType>> InferBatchNormInference(const InferContext& ctx) {
  LS_RETURN_IF_ERROR(CheckActivation(ctx.inputs[0]));
  LS_RETURN_IF_ERROR(CheckChannelVectors(ctx, 1, /*parameters=*/true, {"gamma", "beta"}));
  LS_RETURN_IF_ERROR(CheckSameParameterDType(ctx));
  LS_RETURN_IF_ERROR(CheckChannelVectors(ctx, 3, /*parameters=*/false, {"mean", "var"}));
  return std::vector<TensorType>{ctx.inputs[0]};
}

// Only y reaches the loss; the batch statistics are saved for the backward and the running
// averages are side effects. `grad_op` gets the forward's attributes but the momentum.
std::vector<Value*> NormBackward(GradContext& g, const char* grad_op) {
  std::vector<Value*> grads(5, nullptr);
  if (g.dy(0) == nullptr) return grads;
  Attrs attrs;
  for (const auto& [name, value] : g.attrs().items()) {
    if (name != "momentum") attrs.Set(name, value);
  }
  std::vector<Value*> d = g.builder.Op(
      grad_op, {g.input(0), g.input(1), g.output(1), g.output(2), g.dy(0)}, std::move(attrs));
  if (d.size() == 3) std::copy(d.begin(), d.end(), grads.begin());
  return grads;
}

std::vector<Value*> BatchNormBackward(GradContext& g) { return NormBackward(g, "BatchNormGrad"); }
std::vector<Value*> SyncBatchNormBackward(GradContext& g) {
  return NormBackward(g, "SyncBatchNormGrad");
}

// Mixed precision: the data in the low dtype from O2, the scale and bias (inputs 1, 2) float32
// below O3, the running statistics (3, 4) float32 at every level, as MindSpore keeps them.
REGISTER_OP("BatchNorm")
    .Inputs(5)
    .Outputs(5)
    .LowPrecisionFrom(AmpLevel::kO2)
    .Float32Inputs({1, 2}, /*until=*/AmpLevel::kO3)
    .Float32Inputs({3, 4})
    .Attr("epsilon", 1e-5)
    // running = momentum * running + (1 - momentum) * batch, as MindSpore.
    .Attr("momentum", 0.9)
    .Infer(InferBatchNorm)
    .Grad(BatchNormBackward)
    .InPlace(3, 3)
    .InPlace(4, 4)
    .InferenceAs({"BatchNormInference"}, {"momentum"});

REGISTER_OP("BatchNormGrad").Inputs(5).Outputs(3).Attr("epsilon", 1e-5).Infer(InferBatchNormGrad);

// (x, gamma, beta, running_mean, running_var) -> (relu(y), saved_mean, saved_var, running_mean',
// running_var', mask). Made after autodiff, so it has no gradient rule.
REGISTER_OP("BatchNormRelu")
    .Inputs(5)
    .Outputs(6)
    .LowPrecisionFrom(AmpLevel::kO2)
    .Float32Inputs({1, 2}, /*until=*/AmpLevel::kO3)
    .Float32Inputs({3, 4})
    .Attr("epsilon", 1e-5)
    .Attr("momentum", 0.9)
    .Infer(InferBatchNormRelu)
    .InPlace(3, 3)
    .InPlace(4, 4)
    .InferenceAs({"BatchNormInference", "Relu"}, {"momentum"});

// (x, gamma, saved_mean, saved_var, dy, mask) -> (dx, dgamma, dbeta).
REGISTER_OP("BatchNormReluGrad")
    .Inputs(6)
    .Outputs(3)
    .Attr("epsilon", 1e-5)
    .Infer(InferBatchNormReluGrad);

// Float32 at every amp level: its statistics AllReduce over the group is float32.
REGISTER_OP("SyncBatchNorm")
    .Inputs(5)
    .Outputs(5)
    .Attr("epsilon", 1e-5)
    .Attr("momentum", 0.9)
    .Attr("group", std::string("world"))
    .Infer(InferBatchNorm)
    .Grad(SyncBatchNormBackward)
    .InPlace(3, 3)
    .InPlace(4, 4)
    .InferenceAs({"BatchNormInference"}, {"momentum", "group"});

REGISTER_OP("SyncBatchNormGrad")
    .Inputs(5)
    .Outputs(3)
    .Attr("epsilon", 1e-5)
    .Attr("group", std::string("world"))
    .Infer(InferBatchNormGrad);

// Mixed precision as BatchNorm, whose running statistics it reads.
REGISTER_OP("BatchNormInference")
    .Inputs(5)
    .Outputs(1)
    .LowPrecisionFrom(AmpLevel::kO2)
    .Float32Inputs({1, 2}, /*until=*/AmpLevel::kO3)
    .Float32Inputs({3, 4})
    .Attr("epsilon", 1e-5)
    .Infer(InferBatchNormInference)
    .InferenceAsItself();

// BatchNorm -> Relu, whose backward is ReluGrad -> BatchNormGrad, becomes BatchNormRelu and
// BatchNormReluGrad: the normalization applies the ReLU and keeps its mask for the backward, so
// neither the ReLU nor its gradient reads and writes the activation again.
void FuseNormRelu(FusionContext& ctx, const Node& norm) {
  const auto [relu, relu_grad] = ctx.OnlyReaders(norm.output(0), "Relu", "ReluGrad");
  if (relu == nullptr || relu_grad == nullptr) return;
  const std::vector<Node*>& dy_readers = ctx.Readers(relu_grad->output());
  if (dy_readers.size() != 1) return;
  const Node& norm_grad = *dy_readers[0];
  // (x, gamma, saved_mean, saved_var, dy): the gradient of this very normalization.
  if (norm_grad.op->name() != "BatchNormGrad" || norm_grad.inputs[0] != norm.inputs[0] ||
      norm_grad.inputs[2] != norm.output(1) || norm_grad.inputs[3] != norm.output(2) ||
      norm_grad.inputs[4] != relu_grad->output()) {
    return;
  }
  const std::vector<Value*> fused = ctx.Before(norm).Op("BatchNormRelu", norm.inputs, norm.attrs);
  if (fused.empty()) return;
  const std::vector<Value*> grads =
      ctx.Before(norm_grad).Op("BatchNormReluGrad",
                               {norm_grad.inputs[0], norm_grad.inputs[1], fused[1], fused[2],
                                relu_grad->inputs[1], fused[5]},
                               norm_grad.attrs);
  if (grads.empty()) return;
  ctx.Replace(norm, fused);
  ctx.Replace(*relu, {fused[0]});
  ctx.MarkFused(*relu_grad);
  ctx.Replace(norm_grad, grads);
}

REGISTER_FUSION({.name = "BatchNormRelu",
                 .anchor = "BatchNorm",
                 .fused_ops = {"BatchNormRelu", "BatchNormReluGrad"},
                 .rewrite = FuseNormRelu});

}  // namespace
}  // namespace lockstep
