// Pooling: MaxPool, AvgPool and GlobalAvgPool with their gradients. Windows follow PyTorch:
// symmetric padding of at most half the kernel, padding counts as -inf for MaxPool, and
// count_include_pad decides whether AvgPool divides by the whole window or its in-bounds part.
// Strides default to 1 (as MindSpore), not to the kernel. MaxPoolWithArgmax and
// MaxPoolGradWithArgmax, made by the FuseKernels pass, keep where each maximum was for the
// backward instead of finding it again.

#include <string>
#include <variant>
#include <vector>

#include "graph/builder.h"
#include "graph/fusion.h"
#include "graph/op_registry.h"

namespace lockstep {
namespace {

absl::Status CheckActivation(const Shape& x, const char* name) {
  if (x.size() == 4) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(name, " must be 4-D (N, C, H, W), got ", ShapeToString(x)));
}

// The [h, w] list attribute `name`, each entry at least `min`.
absl::StatusOr<std::vector<int64_t>> Pair(const Attrs& attrs, const std::string& name,
                                          int64_t min) {
  const auto* pair = std::get_if<std::vector<int64_t>>(&attrs.Get(name));
  if (pair == nullptr || pair->size() != 2 || (*pair)[0] < min || (*pair)[1] < min) {
    return absl::InvalidArgumentError(absl::StrCat(name, " must be [h, w] with entries >= ", min,
                                                   ", got ", AttrToString(attrs.Get(name))));
  }
  return *pair;
}

// (N, C, H, W) -> (N, C, OH, OW) under the window attributes kernel, stride and padding.
absl::StatusOr<Shape> PoolOutputShape(const Shape& x, const Attrs& attrs) {
  LS_RETURN_IF_ERROR(CheckActivation(x, "x"));
  LS_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, Pair(attrs, "kernel", 1));
  LS_ASSIGN_OR_RETURN(std::vector<int64_t> stride, Pair(attrs, "stride", 1));
  LS_ASSIGN_OR_RETURN(std::vector<int64_t> padding, Pair(attrs, "padding", 0));
  Shape y = {x[0], x[1], 0, 0};
  for (int i = 0; i < 2; ++i) {
    if (2 * padding[i] > kernel[i]) {
      return absl::InvalidArgumentError(absl::StrCat("padding ", AttrToString(padding),
                                                     " must be at most half the kernel ",
                                                     AttrToString(kernel)));
    }
    const int64_t padded = x[2 + i] + 2 * padding[i];
    if (kernel[i] > padded) {
      return absl::InvalidArgumentError(
          absl::StrCat("kernel ", AttrToString(kernel), " is larger than the padded input ",
                       x[2] + 2 * padding[0], "x", x[3] + 2 * padding[1]));
    }
    y[2 + i] = (padded - kernel[i]) / stride[i] + 1;
  }
  return y;
}

// The incoming gradient must have the shape the forward op gives `x`.
absl::Status CheckDy(const TensorType& dy, const Shape& y, const Shape& x) {
  if (dy.shape == y) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("dy must be ", ShapeToString(y), " for x ",
                                                 ShapeToString(x), ", got ", TypeToString(dy)));
}

absl::StatusOr<Shape> InputShapeAttr(const Attrs& attrs) {
  const auto* shape = std::get_if<std::vector<int64_t>>(&attrs.Get("input_shape"));
  if (shape == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("input_shape must be a list of ints, got ",
                                                   AttrToString(attrs.Get("input_shape"))));
  }
  return *shape;
}

// MaxPool, AvgPool: x (N, C, H, W) -> (N, C, OH, OW).
absl::StatusOr<std::vector<TensorType>> InferPool(const InferContext& ctx) {
  LS_ASSIGN_OR_RETURN(Shape y, PoolOutputShape(ctx.inputs[0].shape, ctx.attrs));
  return std::vector<TensorType>{{y, ctx.inputs[0].dtype}};
}

// (x (N, C, H, W), dy (N, C, OH, OW)) -> dx (N, C, H, W).
absl::StatusOr<std::vector<TensorType>> InferMaxPoolGrad(const InferContext& ctx) {
  const TensorType& x = ctx.inputs[0];
  LS_ASSIGN_OR_RETURN(Shape y, PoolOutputShape(x.shape, ctx.attrs));
  LS_RETURN_IF_ERROR(CheckDy(ctx.inputs[1], y, x.shape));
  if (ctx.inputs[1].dtype != x.dtype) {
    return absl::InvalidArgumentError(absl::StrCat("dy must have x's dtype ", DTypeName(x.dtype),
                                                   ", got ", TypeToString(ctx.inputs[1])));
  }
  return std::vector<TensorType>{x};
}

// Where each window's maximum was: opaque bytes the kernel writes, at most 4 per element of y
// (an index into the window).
TensorType ArgmaxType(const Shape& y) { return {{4 * NumElements(y)}, DType::kU8}; }

// x (N, C, H, W) -> (y (N, C, OH, OW), argmax).
absl::StatusOr<std::vector<TensorType>> InferMaxPoolWithArgmax(const InferContext& ctx) {
  LS_ASSIGN_OR_RETURN(Shape y, PoolOutputShape(ctx.inputs[0].shape, ctx.attrs));
  return std::vector<TensorType>{{y, ctx.inputs[0].dtype}, ArgmaxType(y)};
}

// (dy (N, C, OH, OW), argmax) -> dx (N, C, H, W) = input_shape.
absl::StatusOr<std::vector<TensorType>> InferMaxPoolGradWithArgmax(const InferContext& ctx) {
  LS_ASSIGN_OR_RETURN(Shape x, InputShapeAttr(ctx.attrs));
  LS_ASSIGN_OR_RETURN(Shape y, PoolOutputShape(x, ctx.attrs));
  LS_RETURN_IF_ERROR(CheckDy(ctx.inputs[0], y, x));
  if (ctx.inputs[1] != ArgmaxType(y)) {
    return absl::InvalidArgumentError(absl::StrCat("argmax must be ", TypeToString(ArgmaxType(y)),
                                                   ", got ", TypeToString(ctx.inputs[1])));
  }
  return std::vector<TensorType>{{x, ctx.inputs[0].dtype}};
}

// dy (N, C, OH, OW) -> dx (N, C, H, W) = input_shape.
absl::StatusOr<std::vector<TensorType>> InferAvgPoolGrad(const InferContext& ctx) {
  LS_ASSIGN_OR_RETURN(Shape x, InputShapeAttr(ctx.attrs));
  LS_ASSIGN_OR_RETURN(Shape y, PoolOutputShape(x, ctx.attrs));
  LS_RETURN_IF_ERROR(CheckDy(ctx.inputs[0], y, x));
  return std::vector<TensorType>{{x, ctx.inputs[0].dtype}};
}

// (N, C, H, W) -> (N, C, 1, 1).
absl::StatusOr<std::vector<TensorType>> InferGlobalAvgPool(const InferContext& ctx) {
  const Shape& x = ctx.inputs[0].shape;
  LS_RETURN_IF_ERROR(CheckActivation(x, "x"));
  return std::vector<TensorType>{{{x[0], x[1], 1, 1}, ctx.inputs[0].dtype}};
}

// dy (N, C, 1, 1) -> dx (N, C, H, W) = input_shape.
absl::StatusOr<std::vector<TensorType>> InferGlobalAvgPoolGrad(const InferContext& ctx) {
  LS_ASSIGN_OR_RETURN(Shape x, InputShapeAttr(ctx.attrs));
  LS_RETURN_IF_ERROR(CheckActivation(x, "input_shape"));
  LS_RETURN_IF_ERROR(CheckDy(ctx.inputs[0], {x[0], x[1], 1, 1}, x));
  return std::vector<TensorType>{{x, ctx.inputs[0].dtype}};
}

Attrs WithInputShape(Attrs attrs, const Value* x) {
  attrs.Set("input_shape", x->shape());
  return attrs;
}

REGISTER_OP("MaxPool")
    .Inputs(1)
    .LowPrecisionFrom(AmpLevel::kO2)
    .Attr("kernel")
    .Attr("stride", std::vector<int64_t>{1, 1})
    .Attr("padding", std::vector<int64_t>{0, 0})
    .Infer(InferPool)
    .Grad([](GradContext& g) {
      return std::vector<Value*>{g.builder.Op1("MaxPoolGrad", {g.input(0), g.dy()}, g.attrs())};
    })
    .InferenceAsItself();

// Routes each window's gradient to its first maximum (row-major); not differentiable.
REGISTER_OP("MaxPoolGrad")
    .Inputs(2)
    .Attr("kernel")
    .Attr("stride", std::vector<int64_t>{1, 1})
    .Attr("padding", std::vector<int64_t>{0, 0})
    .Infer(InferMaxPoolGrad);

// Made after autodiff from a MaxPool and its MaxPoolGrad, so neither has a gradient rule.
REGISTER_OP("MaxPoolWithArgmax")
    .Inputs(1)
    .LowPrecisionFrom(AmpLevel::kO2)
    .Outputs(2)
    .Attr("kernel")
    .Attr("stride", std::vector<int64_t>{1, 1})
    .Attr("padding", std::vector<int64_t>{0, 0})
    .Infer(InferMaxPoolWithArgmax)
    .InferenceAs({"MaxPool"});

REGISTER_OP("MaxPoolGradWithArgmax")
    .Inputs(2)
    .Attr("input_shape")
    .Attr("kernel")
    .Attr("stride", std::vector<int64_t>{1, 1})
    .Attr("padding", std::vector<int64_t>{0, 0})
    .Infer(InferMaxPoolGradWithArgmax);

REGISTER_OP("AvgPool")
    .Inputs(1)
    .LowPrecisionFrom(AmpLevel::kO2)
    .Attr("kernel")
    .Attr("stride", std::vector<int64_t>{1, 1})
    .Attr("padding", std::vector<int64_t>{0, 0})
    .Attr("count_include_pad", true)
    .Infer(InferPool)
    .Grad([](GradContext& g) {
      return std::vector<Value*>{
          g.builder.Op1("AvgPoolGrad", {g.dy()}, WithInputShape(g.attrs(), g.input(0)))};
    })
    .InferenceAsItself();

REGISTER_OP("AvgPoolGrad")
    .Inputs(1)
    .Attr("input_shape")
    .Attr("kernel")
    .Attr("stride", std::vector<int64_t>{1, 1})
    .Attr("padding", std::vector<int64_t>{0, 0})
    .Attr("count_include_pad", true)
    .Infer(InferAvgPoolGrad);

REGISTER_OP("GlobalAvgPool")
    .Inputs(1)
    .LowPrecisionFrom(AmpLevel::kO2)
    .Infer(InferGlobalAvgPool)
    .Grad([](GradContext& g) {
      return std::vector<Value*>{
          g.builder.Op1("GlobalAvgPoolGrad", {g.dy()}, WithInputShape({}, g.input(0)))};
    })
    .InferenceAsItself();

REGISTER_OP("GlobalAvgPoolGrad").Inputs(1).Attr("input_shape").Infer(InferGlobalAvgPoolGrad);

// MaxPool with its MaxPoolGrad becomes MaxPoolWithArgmax and MaxPoolGradWithArgmax: the forward
// keeps where each maximum was, so the backward does not run the forward again.
void KeepArgmax(FusionContext& ctx, const Node& pool) {
  Value* x = pool.inputs[0];
  // MaxPoolGrad (x, dy) with the same window over the same x needs this very argmax.
  const Node* pool_grad = nullptr;
  for (const Node* reader : ctx.AllReaders(x)) {
    if (reader->op->name() == "MaxPoolGrad" && reader->inputs[0] == x &&
        reader->attrs.items() == pool.attrs.items() && !ctx.IsFused(*reader)) {
      pool_grad = reader;
    }
  }
  if (pool_grad == nullptr) return;
  const std::vector<Value*> fused = ctx.Before(pool).Op("MaxPoolWithArgmax", {x}, pool.attrs);
  if (fused.empty()) return;
  Value* dx = ctx.Before(*pool_grad)
                  .Op1("MaxPoolGradWithArgmax", {pool_grad->inputs[1], fused[1]},
                       WithInputShape(pool.attrs, x));
  if (dx == nullptr) return;
  ctx.Replace(pool, fused);
  ctx.Replace(*pool_grad, {dx});
}

REGISTER_FUSION({.name = "MaxPoolWithArgmax",
                 .anchor = "MaxPool",
                 .fused_ops = {"MaxPoolWithArgmax", "MaxPoolGradWithArgmax"},
                 .rewrite = KeepArgmax});

}  // namespace
}  // namespace lockstep
