#pragma once

// The bases of every backend's kernels over one view of input 0's shape (ops/kernel_shapes.h),
// read off the node once, when the kernel is built: the rows of the loss and metric ops, the
// channels of the channel-wise broadcasts and sums.

#include "graph/kernel.h"
#include "ops/kernel_shapes.h"

namespace lockstep {

// Input 0 is (N, C): samples and classes.
class RowsKernel : public Kernel {
 public:
  explicit RowsKernel(const Node& node) : rows_(node) {}

 protected:
  const Rows rows_;
};

// Input 0 is (N, C, inner...): BiasAdd and its gradient.
class ChannelsKernel : public Kernel {
 public:
  explicit ChannelsKernel(const Node& node) : geometry_(node.inputs[0]->shape()) {}

 protected:
  const ChannelGeometry geometry_;
};

}  // namespace lockstep
