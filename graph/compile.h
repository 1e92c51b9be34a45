#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "graph/executor.h"
#include "graph/pass.h"

namespace lockstep {

struct CompileOptions {
  Device device = Device::CPU();
  // See PassContext::shared_layouts: what the ranks agreed on (parallel/shared_layouts.h).
  std::optional<std::vector<Layout>> shared_layouts;
  // Set to differentiate (training graphs); unset for forward-only graphs.
  std::optional<AutodiffOptions> autodiff;
  // Passes run in this order right after Autodiff (the optimizer update, the data-parallel
  // passes); each factory makes a fresh pass for this compilation. Passes take their options
  // from `config`, not from the factory.
  std::vector<std::function<std::unique_ptr<Pass>()>> after_autodiff;
  // Merge op pairs the device has one kernel for (FuseKernels); off to compare against.
  bool fuse_kernels = true;
  // An executor whose parameter and state buffers the new one uses instead of its own (an eval
  // graph beside its training graph); see Executor::Create.
  const Executor* share_buffers_with = nullptr;
  // What the passes and kernels read (PassContext::config, KernelContext::config): the
  // optimizer's and the data-parallel options, the communication groups of the collectives,
  // the mixed-precision level (AmpOptions, graph/amp.h: above O0 AutoMixedPrecision runs first).
  PassConfig config;
  // Where the executor records the node it runs (Executor::RecordWhereaboutsIn): the rank's,
  // in a multi-rank job (parallel::Context::watchdog); null records nothing.
  std::shared_ptr<Whereabouts> whereabouts;
  // Set: the graph as text before and after every pass, there (the binaries take it from
  // $LOCKSTEP_DUMP_GRAPH).
  std::string dump_dir;
};

// Runs the standard pipeline ([AutoMixedPrecision], Autodiff, the after_autodiff passes,
// FuseKernels, DeadCodeElim, AssignLayouts, MemoryPlan, LowerKernels) and returns an executor for
// the result.
absl::StatusOr<std::unique_ptr<Executor>> Compile(std::unique_ptr<Graph> graph,
                                                  const CompileOptions& options);

// Runs Compile's passes up to MemoryPlan on `graph` and returns the plan, lowering no kernel and
// allocating nothing: what a job needs to know before it commits memory. The workspace, sized by
// LowerKernels, stays 0.
absl::StatusOr<MemoryPlanSizes> PlanMemory(Graph& graph, const CompileOptions& options);

}  // namespace lockstep
