// Kernel fusion, after autodiff and the training passes: where the device has one kernel that
// computes several ops in a single pass over memory, they become one node (what MindSpore's
// graph kernel fusion does). The patterns come from the op families that own the ops (see
// graph/fusion.h); a pattern applies where the device has kernels for all of its fused ops.

#include <vector>

#include "graph/fusion.h"
#include "graph/kernel.h"
#include "graph/passes/passes.h"

namespace lockstep {
namespace {

// Fused ops compute in the dtype of the nodes they replace, which KernelRegistry keys by input 0.
bool DeviceHasKernels(const FusionPattern& pattern, const Node& anchor, DeviceType device) {
  const DType dtype = (anchor.inputs.empty() ? anchor.output(0) : anchor.inputs[0])->dtype();
  for (const std::string& op : pattern.fused_ops) {
    if (!KernelRegistry::Global().Has(op, device, dtype)) return false;
  }
  return true;
}

class FuseKernelsPass : public Pass {
 public:
  absl::string_view name() const override { return "FuseKernels"; }

  absl::Status Run(Graph& graph, PassContext& ctx) override {
    FusionContext fusion(&graph);
    std::vector<const Node*> order;
    for (const auto& node : graph.nodes()) order.push_back(node.get());
    for (const Node* node : order) {
      for (const FusionPattern& pattern : FusionRegistry::Global().AnchoredAt(node->op->name())) {
        if (DeviceHasKernels(pattern, *node, ctx.device.type)) pattern.rewrite(fusion, *node);
      }
    }
    LS_RETURN_IF_ERROR(fusion.status());
    graph.ReplaceUses(fusion.replacement());
    graph.RemoveNodes([&](const Node& node) { return fusion.IsFused(node); });
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<Pass> CreateFuseKernelsPass() { return std::make_unique<FuseKernelsPass>(); }

}  // namespace lockstep
