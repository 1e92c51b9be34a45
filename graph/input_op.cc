// "Input": a graph input. Its role attribute says whether it is fed each step (data), trained
// (parameter) or carried across steps (state). Its value is written by the caller or the
// optimizer, never computed, so it has no kernel. The registry registers it when it is first
// used: a static registrar in this library could be dropped by the linker.

#include "graph/op_registry.h"

namespace lockstep {
namespace {

absl::StatusOr<std::vector<TensorType>> InferInput(const InferContext& ctx) {
  TensorType type;
  type.shape = ctx.attrs.GetInts("shape");
  if (!ParseDType(ctx.attrs.GetString("dtype"), &type.dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown dtype '", ctx.attrs.GetString("dtype"), "'"));
  }
  for (int64_t d : type.shape) {
    if (d <= 0) return absl::InvalidArgumentError("input dimensions must be positive");
  }
  return std::vector<TensorType>{type};
}

}  // namespace

void RegisterInputOp(OpRegistry& registry) {
  registry.Register("Input").Inputs(0).Outputs(1).Attr("role").Attr("shape").Attr("dtype").Infer(
      InferInput);
}

}  // namespace lockstep
