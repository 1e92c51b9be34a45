#pragma once

#include <memory>
#include <optional>

#include "graph/executor.h"
#include "graph/pass.h"

namespace lockstep {

struct CompileOptions {
  Device device = Device::CPU();
  // Set to differentiate (training graphs); unset for forward-only graphs.
  std::optional<AutodiffOptions> autodiff;
  std::string dump_dir;  // defaults to $LOCKSTEP_DUMP_GRAPH
};

// Runs the standard pipeline (Autodiff, DeadCodeElim, AssignLayouts, MemoryPlan, LowerKernels)
// and returns an executor for the result.
absl::StatusOr<std::unique_ptr<Executor>> Compile(std::unique_ptr<Graph> graph,
                                                  const CompileOptions& options);

}  // namespace lockstep
