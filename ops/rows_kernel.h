#pragma once

// The base of every backend's kernels over the rows of an (N, C) input 0 (the loss and metric
// ops): the rows are read off the node once, when the kernel is built.

#include "graph/kernel.h"
#include "ops/kernel_shapes.h"

namespace lockstep {

class RowsKernel : public Kernel {
 public:
  explicit RowsKernel(const Node& node) : rows_(node) {}

 protected:
  const Rows rows_;
};

}  // namespace lockstep
