// Reorder: the same tensor in another memory layout. Inserted by the AssignLayouts pass after
// autodiff, so it needs no gradient.

#include "ops/reorder.h"

#include "core/layout.h"
#include "graph/op_registry.h"

namespace lockstep {
namespace {

absl::StatusOr<std::vector<TensorType>> InferReorder(const InferContext& ctx) {
  Layout layout;
  if (!ParseLayout(ctx.attrs.GetString("layout"), &layout)) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown layout '", ctx.attrs.GetString("layout"), "'"));
  }
  if (!LayoutEligible(layout, ctx.inputs[0].shape, ctx.inputs[0].dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat(TypeToString(ctx.inputs[0]), " cannot use layout ", LayoutName(layout)));
  }
  return std::vector<TensorType>{ctx.inputs[0]};
}

REGISTER_OP("Reorder")
    .Inputs(1)
    .Attr("layout")
    .Infer(InferReorder)
    .InferencePassesInput()
    .FollowsInputPrecision();

}  // namespace

LayoutChoice ReorderLayouts(const Node& node, const std::vector<Layout>& producer_layouts,
                            const SharedLayouts&) {
  Layout target = Layout::kPlain;
  LS_CHECK(ParseLayout(node.attrs.GetString("layout"), &target)) << node.Describe();
  return {producer_layouts, {target}};
}

}  // namespace lockstep
