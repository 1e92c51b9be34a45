// Conv2D (no bias) and its backprop ops, and the layouts their kernels take (ops/conv_layouts.h).
// Attributes follow PyTorch: symmetric padding, and dilation 1 means a dense kernel.

#include <string>
#include <variant>
#include <vector>

#include "graph/builder.h"
#include "graph/op_registry.h"
#include "ops/conv_layouts.h"

namespace lockstep {
namespace {

// Checks a two-entry attribute ([h, w]) whose entries must be at least `min`.
absl::Status CheckPair(const Attrs& attrs, const std::string& name, int64_t min) {
  const auto* pair = std::get_if<std::vector<int64_t>>(&attrs.Get(name));
  if (pair == nullptr || pair->size() != 2 || (*pair)[0] < min || (*pair)[1] < min) {
    return absl::InvalidArgumentError(absl::StrCat(name, " must be [h, w] with entries >= ", min,
                                                   ", got ", AttrToString(attrs.Get(name))));
  }
  return absl::OkStatus();
}

// A shape attribute (input_shape, filter_shape) of the backprop ops.
absl::StatusOr<Shape> ShapeAttr(const Attrs& attrs, const std::string& name) {
  const auto* shape = std::get_if<std::vector<int64_t>>(&attrs.Get(name));
  if (shape == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " must be a list of ints, got ", AttrToString(attrs.Get(name))));
  }
  return *shape;
}

// (N, C, H, W) convolved with (O, C/groups, KH, KW) -> (N, O, OH, OW).
absl::StatusOr<Shape> ConvOutputShape(const Shape& x, const Shape& w, const Attrs& attrs) {
  if (x.size() != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("x must be 4-D (N, C, H, W), got ", ShapeToString(x)));
  }
  if (w.size() != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("w must be 4-D (O, C/groups, KH, KW), got ", ShapeToString(w)));
  }
  LS_RETURN_IF_ERROR(CheckPair(attrs, "stride", 1));
  LS_RETURN_IF_ERROR(CheckPair(attrs, "padding", 0));
  LS_RETURN_IF_ERROR(CheckPair(attrs, "dilation", 1));
  const auto* groups_attr = std::get_if<int64_t>(&attrs.Get("groups"));
  if (groups_attr == nullptr || *groups_attr < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("groups must be an int >= 1, got ", AttrToString(attrs.Get("groups"))));
  }
  const int64_t groups = *groups_attr;
  if (x[1] % groups != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("groups = ", groups, " does not divide the input channels C = ", x[1]));
  }
  if (w[0] % groups != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("groups = ", groups, " does not divide the output channels O = ", w[0]));
  }
  if (w[1] * groups != x[1]) {
    return absl::InvalidArgumentError(
        absl::StrCat("w has ", w[1], " input channels per group, x has C = ", x[1],
                     ", which with groups = ", groups, " expects ", x[1] / groups));
  }
  const std::vector<int64_t>& stride = attrs.GetInts("stride");
  const std::vector<int64_t>& padding = attrs.GetInts("padding");
  const std::vector<int64_t>& dilation = attrs.GetInts("dilation");
  Shape y = {x[0], w[0], 0, 0};
  for (int i = 0; i < 2; ++i) {
    const int64_t extent = (w[2 + i] - 1) * dilation[i] + 1;
    const int64_t padded = x[2 + i] + 2 * padding[i];
    if (extent > padded) {
      return absl::InvalidArgumentError(absl::StrCat(
          "kernel ", w[2], "x", w[3], " spans ", extent, " with dilation ", AttrToString(dilation),
          ", more than the padded input ", i == 0 ? "height " : "width ", padded));
    }
    y[2 + i] = (padded - extent) / stride[i] + 1;
  }
  return y;
}

absl::Status CheckSameDType(const TensorType& a, const TensorType& b) {
  if (a.dtype == b.dtype) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("inputs must have the same dtype, got ",
                                                 TypeToString(a), " and ", TypeToString(b)));
}

// The gradient y has to match the convolution of `x` and `w` under the node's attributes.
absl::Status CheckDy(const Shape& x, const Shape& w, const TensorType& dy, const Attrs& attrs) {
  LS_ASSIGN_OR_RETURN(Shape y, ConvOutputShape(x, w, attrs));
  if (y == dy.shape) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("dy must be ", ShapeToString(y), " for x ",
                                                 ShapeToString(x), " and w ", ShapeToString(w),
                                                 ", got ", TypeToString(dy)));
}

// (x (N, C, H, W), w (O, C/groups, KH, KW)) -> y (N, O, OH, OW).
absl::StatusOr<std::vector<TensorType>> InferConv2D(const InferContext& ctx) {
  const TensorType& x = ctx.inputs[0];
  const TensorType& w = ctx.inputs[1];
  LS_RETURN_IF_ERROR(CheckSameDType(x, w));
  LS_ASSIGN_OR_RETURN(Shape y, ConvOutputShape(x.shape, w.shape, ctx.attrs));
  return std::vector<TensorType>{{y, x.dtype}};
}

// (dy (N, O, OH, OW), w) -> dx (N, C, H, W) with (N, C, H, W) = input_shape.
absl::StatusOr<std::vector<TensorType>> InferBackpropInput(const InferContext& ctx) {
  const TensorType& dy = ctx.inputs[0];
  const TensorType& w = ctx.inputs[1];
  LS_RETURN_IF_ERROR(CheckSameDType(dy, w));
  LS_ASSIGN_OR_RETURN(Shape x, ShapeAttr(ctx.attrs, "input_shape"));
  LS_RETURN_IF_ERROR(CheckDy(x, w.shape, dy, ctx.attrs));
  return std::vector<TensorType>{{x, dy.dtype}};
}

// (x (N, C, H, W), dy (N, O, OH, OW)) -> dw (O, C/groups, KH, KW) = filter_shape.
absl::StatusOr<std::vector<TensorType>> InferBackpropFilter(const InferContext& ctx) {
  const TensorType& x = ctx.inputs[0];
  const TensorType& dy = ctx.inputs[1];
  LS_RETURN_IF_ERROR(CheckSameDType(x, dy));
  LS_ASSIGN_OR_RETURN(Shape w, ShapeAttr(ctx.attrs, "filter_shape"));
  LS_RETURN_IF_ERROR(CheckDy(x.shape, w, dy, ctx.attrs));
  return std::vector<TensorType>{{w, x.dtype}};
}

Attrs WithShape(Attrs attrs, const std::string& name, const Shape& shape) {
  attrs.Set(name, shape);
  return attrs;
}

std::vector<Value*> Conv2DGrad(GradContext& g) {
  Value* x = g.input(0);
  Value* w = g.input(1);
  return {g.builder.Op1("Conv2DBackpropInput", {g.dy(), w},
                        WithShape(g.attrs(), "input_shape", x->shape())),
          g.builder.Op1("Conv2DBackpropFilter", {x, g.dy()},
                        WithShape(g.attrs(), "filter_shape", w->shape()))};
}

REGISTER_OP("Conv2D")
    .LowPrecisionFrom(AmpLevel::kO1)
    .Inputs(2)
    .Attr("stride", std::vector<int64_t>{1, 1})
    .Attr("padding", std::vector<int64_t>{0, 0})
    .Attr("dilation", std::vector<int64_t>{1, 1})
    .Attr("groups", int64_t{1})
    .Infer(InferConv2D)
    .Grad(Conv2DGrad)
    .InferenceAsItself();

// Not differentiable: no second-order gradients.
REGISTER_OP("Conv2DBackpropInput")
    .Inputs(2)
    .Attr("input_shape")
    .Attr("stride", std::vector<int64_t>{1, 1})
    .Attr("padding", std::vector<int64_t>{0, 0})
    .Attr("dilation", std::vector<int64_t>{1, 1})
    .Attr("groups", int64_t{1})
    .Infer(InferBackpropInput);

REGISTER_OP("Conv2DBackpropFilter")
    .Inputs(2)
    .Attr("filter_shape")
    .Attr("stride", std::vector<int64_t>{1, 1})
    .Attr("padding", std::vector<int64_t>{0, 0})
    .Attr("dilation", std::vector<int64_t>{1, 1})
    .Attr("groups", int64_t{1})
    .Infer(InferBackpropFilter);

}  // namespace

LayoutChoice ConvolutionLayouts(const Node& node, int weights_input,
                                const ValueLayoutFn& weight_layout,
                                const ValueLayoutFn& activation_layout) {
  LayoutChoice choice;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const Value& input = *node.inputs[i];
    choice.inputs.push_back(static_cast<int>(i) == weights_input ? weight_layout(input)
                                                                 : activation_layout(input));
  }
  const Value& output = *node.output();
  choice.outputs.push_back(weights_input == kConvWeightsOut ? weight_layout(output)
                                                            : activation_layout(output));
  return choice;
}

}  // namespace lockstep
