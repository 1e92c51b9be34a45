// MatMul: y = op(a) * op(b) for 2-D a and b, op() transposing where asked.

#include "graph/builder.h"
#include "graph/op_registry.h"

namespace lockstep {
namespace {

absl::StatusOr<std::vector<TensorType>> InferMatMul(const InferContext& ctx) {
  const TensorType& a = ctx.inputs[0];
  const TensorType& b = ctx.inputs[1];
  if (a.shape.size() != 2 || b.shape.size() != 2 || a.dtype != b.dtype) {
    return absl::InvalidArgumentError(absl::StrCat("a and b must be 2-D of one dtype, got ",
                                                   TypeToString(a), " and ", TypeToString(b)));
  }
  const bool transpose_a = ctx.attrs.GetBool("transpose_a");
  const bool transpose_b = ctx.attrs.GetBool("transpose_b");
  const int64_t m = a.shape[transpose_a ? 1 : 0];
  const int64_t ka = a.shape[transpose_a ? 0 : 1];
  const int64_t kb = b.shape[transpose_b ? 1 : 0];
  const int64_t n = b.shape[transpose_b ? 0 : 1];
  if (ka != kb) {
    return absl::InvalidArgumentError(
        absl::StrCat("inner dimensions differ: a gives K = ", ka, " (transpose_a=", transpose_a,
                     "), b gives K = ", kb, " (transpose_b=", transpose_b, ")"));
  }
  return std::vector<TensorType>{{{m, n}, a.dtype}};
}

Value* MatMul(Builder& b, Value* x, Value* y, bool transpose_x, bool transpose_y) {
  return b.Op1("MatMul", {x, y}, {{"transpose_a", transpose_x}, {"transpose_b", transpose_y}});
}

// With y = op(a) op(b): d op(a) = dy op(b)^T and d op(b) = op(a)^T dy, transposed back where
// op() transposes, written so that no explicit transpose node is needed.
std::vector<Value*> MatMulBackward(GradContext& g) {
  if (g.dy() == nullptr) return {nullptr, nullptr};
  const bool ta = g.attrs().GetBool("transpose_a");
  const bool tb = g.attrs().GetBool("transpose_b");
  Value* a = g.input(0);
  Value* b = g.input(1);
  Value* da =
      ta ? MatMul(g.builder, b, g.dy(), tb, true) : MatMul(g.builder, g.dy(), b, false, !tb);
  Value* db =
      tb ? MatMul(g.builder, g.dy(), a, true, ta) : MatMul(g.builder, a, g.dy(), !ta, false);
  return {da, db};
}

REGISTER_OP("MatMul")
    .LowPrecisionFrom(AmpLevel::kO1)
    .Inputs(2)
    .Attr("transpose_a", false)
    .Attr("transpose_b", false)
    .Infer(InferMatMul)
    .Grad(MatMulBackward)
    .InferenceAsItself();

}  // namespace
}  // namespace lockstep
