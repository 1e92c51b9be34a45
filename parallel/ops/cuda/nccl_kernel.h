#pragma once

// What every collective kernel on CUDA starts from: the NCCL communicator of the node's group on
// the kernel's device, and an event of its own that marks when its collective is done.

#include <cuda_runtime.h>

#include "graph/kernel.h"
#include "parallel/nccl_communicator.h"

namespace lockstep::parallel {

struct NcclKernelParts {
  NcclCommunicator* communicator;
  cudaEvent_t done;  // the kernel destroys it
};

// Fails, naming the node, when the group's communicator is not NCCL.
absl::StatusOr<NcclKernelParts> NcclPartsFor(const Node& node, const KernelContext& ctx);

}  // namespace lockstep::parallel
