#pragma once

// The data-parallel passes, run right after Autodiff:
//   InsertAllReduce: every parameter gradient gets a summing AllReduce over the group (in
//   place) in ParallelOptions::allreduce_dtype on the wire; ParallelOptions::gradients_mean is
//   the optimizer's to apply.
//   FuseAllReduce: those AllReduce nodes are merged into buckets of about fusion_threshold_mb,
//   each a byte range of the flat gradient buffer, numbered by the "fusion" attribute. Its
//   options are the ParallelOptions in PassContext::config.

#include <memory>

#include "graph/pass.h"
#include "parallel/options.h"

namespace lockstep::parallel {

std::unique_ptr<Pass> CreateInsertAllReducePass();
std::unique_ptr<Pass> CreateFuseAllReducePass();

}  // namespace lockstep::parallel
