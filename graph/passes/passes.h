#pragma once

#include <memory>

#include "graph/pass.h"

namespace lockstep {

// Mixed precision (graph/amp.h): before Autodiff, runs each op in the dtype its precision policy
// gives it at AmpOptions::level, with Cast nodes where values change dtype; results keep theirs.
std::unique_ptr<Pass> CreateAutoMixedPrecisionPass();
// Emits gradient nodes from each op's registered rule, reverse topologically.
std::unique_ptr<Pass> CreateAutodiffPass();
// Merges nodes that one kernel of the device computes in a single pass, by the fusion patterns
// the op families register (graph/fusion.h).
std::unique_ptr<Pass> CreateFuseKernelsPass();
// Removes nodes none of whose outputs reach a graph output.
std::unique_ptr<Pass> CreateDeadCodeElimPass();
// Chooses each value's layout from its kernel's preference and inserts Reorder nodes between
// producers and consumers that disagree.
std::unique_ptr<Pass> CreateAssignLayoutsPass();
// Places every value: parameters, gradients, state and inputs in flat buffers, activations in
// one arena by liveness.
std::unique_ptr<Pass> CreateMemoryPlanPass();
// Binds a kernel to every node and builds its state once.
std::unique_ptr<Pass> CreateLowerKernelsPass();

}  // namespace lockstep
