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
  // passes); each factory makes a fresh pass for this compilation.
  std::vector<std::function<std::unique_ptr<Pass>()>> after_autodiff;
  // Merge op pairs the device has one kernel for (FuseKernels); off to compare against.
  bool fuse_kernels = true;
  // An executor whose parameter and state buffers the new one uses instead of its own (an eval
  // graph beside its training graph); see Executor::Create.
  const Executor* share_buffers_with = nullptr;
  std::string dump_dir;  // defaults to $LOCKSTEP_DUMP_GRAPH
};

// Runs the standard pipeline (Autodiff, the after_autodiff passes, FuseKernels, DeadCodeElim,
// AssignLayouts, MemoryPlan, LowerKernels) and returns an executor for the result.
absl::StatusOr<std::unique_ptr<Executor>> Compile(std::unique_ptr<Graph> graph,
                                                  const CompileOptions& options);

}  // namespace lockstep
