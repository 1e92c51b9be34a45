// Reorder: the same tensor in another memory layout. Inserted by the AssignLayouts pass after
// autodiff, so it needs no gradient.

#include "graph/op_registry.h"

namespace lockstep {
namespace {

REGISTER_OP("Reorder").Inputs(1).Attr("layout").Infer([](const InferContext& ctx) {
  return absl::StatusOr<std::vector<TensorType>>(std::vector<TensorType>{ctx.inputs[0]});
});

}  // namespace
}  // namespace lockstep
