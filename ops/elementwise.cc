// Element-wise ops: Add, Relu, Scale, Fill, Cast, BiasAdd and their gradients.

#include "graph/builder.h"
#include "graph/fusion.h"
#include "graph/op_registry.h"

namespace lockstep {
namespace {

absl::StatusOr<std::vector<TensorType>> SameAsInput(const InferContext& ctx) {
  return std::vector<TensorType>{ctx.inputs[0]};
}

absl::StatusOr<std::vector<TensorType>> InferSameShapes(const InferContext& ctx) {
  for (const TensorType& input : ctx.inputs) {
    if (input != ctx.inputs[0]) {
      return absl::InvalidArgumentError(absl::StrCat("inputs must have the same type, got ",
                                                     TypeToString(ctx.inputs[0]), " and ",
                                                     TypeToString(input)));
    }
  }
  return std::vector<TensorType>{ctx.inputs[0]};
}

absl::StatusOr<DType> DTypeAttr(const Attrs& attrs) {
  DType dtype;
  if (!ParseDType(attrs.GetString("dtype"), &dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown dtype '", attrs.GetString("dtype"), "'"));
  }
  return dtype;
}

absl::StatusOr<std::vector<TensorType>> InferFill(const InferContext& ctx) {
  LS_ASSIGN_OR_RETURN(DType dtype, DTypeAttr(ctx.attrs));
  return std::vector<TensorType>{{ctx.attrs.GetInts("shape"), dtype}};
}

absl::StatusOr<std::vector<TensorType>> InferCast(const InferContext& ctx) {
  LS_ASSIGN_OR_RETURN(DType dtype, DTypeAttr(ctx.attrs));
  return std::vector<TensorType>{{ctx.inputs[0].shape, dtype}};
}

absl::StatusOr<std::vector<TensorType>> InferBiasAdd(const InferContext& ctx) {
  const TensorType& x = ctx.inputs[0];
  const TensorType& bias = ctx.inputs[1];
  if (x.shape.size() < 2 || bias.shape.size() != 1 || bias.shape[0] != x.shape[1]) {
    return absl::InvalidArgumentError(
        absl::StrCat("bias must be (C) with C = dimension 1 of x, got x ", TypeToString(x),
                     " and bias ", TypeToString(bias)));
  }
  if (bias.dtype != x.dtype) {
    return absl::InvalidArgumentError(absl::StrCat("bias must have x's dtype ", DTypeName(x.dtype),
                                                   ", got bias ", TypeToString(bias)));
  }
  return std::vector<TensorType>{x};
}

absl::StatusOr<std::vector<TensorType>> InferBiasAddGrad(const InferContext& ctx) {
  if (ctx.inputs[0].shape.size() < 2) {
    return absl::InvalidArgumentError("dy must have at least 2 dimensions (N, C, ...)");
  }
  return std::vector<TensorType>{{{ctx.inputs[0].shape[1]}, ctx.inputs[0].dtype}};
}

REGISTER_OP("Add")
    .Inputs(2)
    .LowPrecisionFrom(AmpLevel::kO2)
    .Infer(InferSameShapes)
    .Grad([](GradContext& g) {
      return std::vector<Value*>{g.dy(), g.dy()};
    })
    .InferenceAsItself()
    .SumsGradients();

REGISTER_OP("Relu")
    .Inputs(1)
    .LowPrecisionFrom(AmpLevel::kO2)
    .Infer(SameAsInput)
    .Grad([](GradContext& g) {
      return std::vector<Value*>{g.builder.Op1("ReluGrad", {g.input(0), g.dy()})};
    })
    .InferenceAsItself();
// (x, dy) -> dy where x > 0.
REGISTER_OP("ReluGrad").Inputs(2).Infer(InferSameShapes);

// relu(a + b), a residual connection's sum and ReLU in one pass. Made after autodiff by the
// FuseKernels pass (the backward's ReluGrad then reads this output: it is > 0 where a + b is).
REGISTER_OP("AddRelu")
    .Inputs(2)
    .Infer(InferSameShapes)
    .InferenceAs({"Add", "Relu"})
    .LowPrecisionFrom(AmpLevel::kO2);

// (x, dy1, dy2) -> dy1 + dy2 where x > 0: a ReLU's gradient when two gradients meet at its
// output (a residual block's input), made by the FuseKernels pass.
REGISTER_OP("AddReluGrad").Inputs(3).Infer(InferSameShapes);

REGISTER_OP("Scale")
    .Inputs(1)
    .Attr("scale")
    .Infer(SameAsInput)
    .Grad([](GradContext& g) {
      return std::vector<Value*>{
          g.builder.Op1("Scale", {g.dy()}, {{"scale", g.attrs().Get("scale")}})};
    })
    .LowPrecisionFrom(AmpLevel::kO2);

// No inputs: its dtype is its attribute at every amp level.
REGISTER_OP("Fill")
    .Inputs(0)
    .Attr("shape")
    .Attr("value", 0.0)
    .Attr("dtype", std::string("f32"))
    .Infer(InferFill);

REGISTER_OP("Cast")
    .Inputs(1)
    .Attr("dtype")
    .Infer(InferCast)
    .Grad([](GradContext& g) {
      std::string back(DTypeName(g.input(0)->dtype()));
      return std::vector<Value*>{g.builder.Op1("Cast", {g.dy()}, {{"dtype", back}})};
    })
    .FollowsInputPrecision();

REGISTER_OP("BiasAdd")
    .Inputs(2)
    .LowPrecisionFrom(AmpLevel::kO2)
    .Infer(InferBiasAdd)
    .Grad([](GradContext& g) {
      return std::vector<Value*>{g.dy(), g.builder.Op1("BiasAddGrad", {g.dy()})};
    })
    .InferenceAsItself();
// (N, C, ...) -> (C): the sum over every axis but 1.
REGISTER_OP("BiasAddGrad").Inputs(1).Infer(InferBiasAddGrad);

// Add -> Relu (a residual connection) becomes AddRelu, and the ReLU's gradient reads its output,
// which is > 0 exactly where the sum is: the sum is never written.
void FuseAddRelu(FusionContext& ctx, const Node& add) {
  const auto [relu, relu_grad] = ctx.OnlyReaders(add.output(), "Relu", "ReluGrad");
  if (relu == nullptr) return;
  Value* fused = ctx.Before(add).Op1("AddRelu", add.inputs, add.attrs);
  if (fused == nullptr) return;
  if (relu_grad != nullptr) relu_grad->inputs[0] = fused;
  ctx.Replace(*relu, {fused});
  ctx.MarkFused(add);
}

// Add -> ReluGrad (two gradients meeting at a ReLU's output, a residual block's input) becomes
// AddReluGrad: the summed gradient is never written either.
void FuseAddReluGrad(FusionContext& ctx, const Node& relu_grad) {
  const Value* sum = relu_grad.inputs[1];
  const Node& add = *sum->producer;
  if (ctx.IsFused(relu_grad) || add.op->name() != "Add" || ctx.IsFused(add) ||
      ctx.Readers(sum).size() != 1) {
    return;
  }
  Value* fused = ctx.Before(relu_grad).Op1(
      "AddReluGrad", {relu_grad.inputs[0], add.inputs[0], add.inputs[1]}, relu_grad.attrs);
  if (fused == nullptr) return;
  ctx.Replace(relu_grad, {fused});
  ctx.MarkFused(add);
}

REGISTER_FUSION(
    {.name = "AddRelu", .anchor = "Add", .fused_ops = {"AddRelu"}, .rewrite = FuseAddRelu});
REGISTER_FUSION({.name = "AddReluGrad",
                 .anchor = "ReluGrad",
                 .fused_ops = {"AddReluGrad"},
                 .rewrite = FuseAddReluGrad});

}  // namespace
}  // namespace lockstep
