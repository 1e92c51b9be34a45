// Identity, Reshape and Flatten: the same bytes (Reshape and Flatten in the plain layout only).

#include <numeric>

#include "graph/builder.h"
#include "graph/op_registry.h"

namespace lockstep {
namespace {

absl::StatusOr<std::vector<TensorType>> InferReshape(const InferContext& ctx) {
  Shape shape = ctx.attrs.GetInts("shape");
  const int64_t total = NumElements(ctx.inputs[0].shape);
  int64_t known = 1;
  int inferred = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1 && inferred < 0) {
      inferred = static_cast<int>(i);
    } else if (shape[i] <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad target shape ", ShapeToString(shape), ": one -1 at most, else > 0"));
    } else {
      known *= shape[i];
    }
  }
  if (inferred >= 0 && total % known == 0) shape[inferred] = total / known;
  if (NumElements(shape) != total) {
    return absl::InvalidArgumentError(absl::StrCat("cannot reshape ", total, " elements into ",
                                                   ShapeToString(ctx.attrs.GetInts("shape"))));
  }
  return std::vector<TensorType>{{shape, ctx.inputs[0].dtype}};
}

absl::StatusOr<std::vector<TensorType>> InferFlatten(const InferContext& ctx) {
  const Shape& shape = ctx.inputs[0].shape;
  if (shape.empty()) return absl::InvalidArgumentError("cannot flatten a scalar");
  return std::vector<TensorType>{{{shape[0], NumElements(shape) / shape[0]}, ctx.inputs[0].dtype}};
}

std::vector<Value*> ReshapeBack(GradContext& g) {
  return {g.builder.Op1("Reshape", {g.dy()}, {{"shape", g.input(0)->shape()}})};
}

REGISTER_OP("Identity")
    .Inputs(1)
    .Infer([](const InferContext& ctx) {
      return absl::StatusOr<std::vector<TensorType>>(std::vector<TensorType>{ctx.inputs[0]});
    })
    .Grad([](GradContext& g) { return std::vector<Value*>{g.dy()}; })
    .InferencePassesInput()
    .FollowsInputPrecision();
REGISTER_OP("Reshape")
    .Inputs(1)
    .Attr("shape")
    .Infer(InferReshape)
    .Grad(ReshapeBack)
    .FollowsInputPrecision();
// (N, ...) -> (N, product of the rest).
REGISTER_OP("Flatten")
    .Inputs(1)
    .Infer(InferFlatten)
    .Grad(ReshapeBack)
    .InferenceAsItself()
    .FollowsInputPrecision();

}  // namespace
}  // namespace lockstep
