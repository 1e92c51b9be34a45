// Collective ops, registered by parallel: AllReduce over the ranks of a group.
//
//   %g0', %g1' = AllReduce(%g0, %g1) {op="avg", group="world", fusion=3}
//
// Variadic and in place: output i is input i reduced over the ranks, in input i's memory. The
// FuseAllReduce pass gives one node several gradients (a bucket); "fusion" numbers the buckets
// (0: not fused) and "bytes" is what it moves; both show in graph dumps and the .meta file.
// "wire_dtype" (parallel/wire_dtype.h) is the dtype it moves and sums in (empty: the inputs').

#include "graph/op_registry.h"
#include "parallel/communicator.h"
#include "parallel/wire_dtype.h"

namespace lockstep::parallel {
namespace {

absl::StatusOr<std::vector<TensorType>> InferAllReduce(const InferContext& ctx) {
  if (ctx.inputs.empty()) return absl::InvalidArgumentError("needs at least one input");
  LS_RETURN_IF_ERROR(ParseReduceOp(ctx.attrs.GetString("op")).status());
  for (const TensorType& input : ctx.inputs) {
    if (input.dtype != ctx.inputs[0].dtype) {
      return absl::InvalidArgumentError(absl::StrCat("every input must have the dtype of input 0 (",
                                                     DTypeName(ctx.inputs[0].dtype), "), got ",
                                                     TypeToString(input)));
    }
  }
  LS_RETURN_IF_ERROR(
      ParseWireDType(ctx.inputs[0].dtype, ctx.attrs.GetString("wire_dtype")).status());
  return ctx.inputs;
}

REGISTER_OP("AllReduce")
    .Inputs(kVariadic)
    .Outputs(kVariadic)
    .InPlaceEach()
    .Attr("op", std::string("sum"))
    .Attr("group", std::string("world"))
    .Attr("fusion", int64_t{0})
    .Attr("bytes", int64_t{0})
    .Attr("wire_dtype", std::string())
    .Infer(InferAllReduce);

}  // namespace
}  // namespace lockstep::parallel
