#include "graph/compile.h"

#include "graph/amp.h"
#include "graph/passes/passes.h"

namespace lockstep {

absl::StatusOr<std::unique_ptr<Executor>> Compile(std::unique_ptr<Graph> graph,
                                                  const CompileOptions& options) {
  PassContext ctx;
  ctx.device = options.device;
  ctx.shared_layouts = options.shared_layouts;
  ctx.config = options.config;
  ctx.dump_dir = options.dump_dir;
  PassManager passes;
  const AmpOptions* amp = options.config.Get<AmpOptions>();
  if (amp != nullptr && amp->level != AmpLevel::kO0) passes.Add(CreateAutoMixedPrecisionPass());
  if (options.autodiff) {
    ctx.autodiff = *options.autodiff;
    passes.Add(CreateAutodiffPass());
  }
  for (const auto& make_pass : options.after_autodiff) passes.Add(make_pass());
  if (options.fuse_kernels) passes.Add(CreateFuseKernelsPass());
  passes.Add(CreateDeadCodeElimPass())
      .Add(CreateAssignLayoutsPass())
      .Add(CreateMemoryPlanPass())
      .Add(CreateLowerKernelsPass());
  LS_RETURN_IF_ERROR(passes.Run(*graph, ctx));
  return Executor::Create(std::move(graph), options.device, options.share_buffers_with);
}

}  // namespace lockstep
