#include <algorithm>

#include "core/backend.h"
#include "graph/kernel.h"
#include "graph/passes/passes.h"

namespace lockstep {
namespace {

// Binds each node to its kernel and builds the kernel's state (oneDNN primitives, algorithm
// choice) once; records the largest scratch any kernel needs.
class LowerKernelsPass : public Pass {
 public:
  absl::string_view name() const override { return "LowerKernels"; }

  absl::Status Run(Graph& graph, PassContext& ctx) override {
    // Kernels are built on the current device's library handles (cuDNN, cuBLASLt): that must be
    // the device they will run on, whichever thread compiles.
    LS_RETURN_IF_ERROR(MakeDeviceCurrent(ctx.device));
    size_t workspace = 0;
    for (const auto& node : graph.nodes()) {
      if (node->IsInput()) continue;
      LS_ASSIGN_OR_RETURN(const KernelDef* def,
                          KernelRegistry::Global().Find(*node, ctx.device.type));
      absl::StatusOr<std::unique_ptr<Kernel>> kernel =
          def->create(*node, KernelContext{ctx.device, ctx.config});
      if (!kernel.ok()) return Annotate(kernel.status(), node->Describe());
      workspace = std::max(workspace, (*kernel)->WorkspaceBytes());
      node->kernel = std::move(*kernel);
    }
    graph.plan().workspace = workspace;
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<Pass> CreateLowerKernelsPass() { return std::make_unique<LowerKernelsPass>(); }

}  // namespace lockstep
