#include "graph/compile.h"

#include "graph/amp.h"
#include "graph/passes/passes.h"

namespace lockstep {

namespace {

PassContext ContextFor(const CompileOptions& options) {
  PassContext ctx;
  ctx.device = options.device;
  ctx.shared_layouts = options.shared_layouts;
  ctx.config = options.config;
  ctx.dump_dir = options.dump_dir;
  if (options.autodiff) ctx.autodiff = *options.autodiff;
  return ctx;
}

// The pipeline up to MemoryPlan: Compile adds LowerKernels to the same manager so that the dumps
// stay numbered in one sequence.
PassManager PassesUpToMemoryPlan(const CompileOptions& options) {
  PassManager passes;
  const AmpOptions* amp = options.config.Get<AmpOptions>();
  if (amp != nullptr && amp->level != AmpLevel::kO0) passes.Add(CreateAutoMixedPrecisionPass());
  if (options.autodiff) passes.Add(CreateAutodiffPass());
  for (const auto& make_pass : options.after_autodiff) passes.Add(make_pass());
  if (options.fuse_kernels) passes.Add(CreateFuseKernelsPass());
  passes.Add(CreateDeadCodeElimPass()).Add(CreateAssignLayoutsPass()).Add(CreateMemoryPlanPass());
  return passes;
}

}  // namespace

absl::StatusOr<MemoryPlanSizes> PlanMemory(Graph& graph, const CompileOptions& options) {
  PassContext ctx = ContextFor(options);
  LS_RETURN_IF_ERROR(PassesUpToMemoryPlan(options).Run(graph, ctx));
  return graph.plan();
}

absl::StatusOr<std::unique_ptr<Executor>> Compile(std::unique_ptr<Graph> graph,
                                                  const CompileOptions& options) {
  PassContext ctx = ContextFor(options);
  PassManager passes = PassesUpToMemoryPlan(options);
  passes.Add(CreateLowerKernelsPass());
  LS_RETURN_IF_ERROR(passes.Run(*graph, ctx));
  LS_ASSIGN_OR_RETURN(
      std::unique_ptr<Executor> executor,
      Executor::Create(std::move(graph), options.device, options.share_buffers_with));
  executor->RecordWhereaboutsIn(options.whereabouts);
  return executor;
}

}  // namespace lockstep
