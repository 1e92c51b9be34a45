#pragma once

// How kernels of every backend view their shapes, in one place.

#include <cstdint>

#include "core/tensor.h"
#include "graph/graph.h"

namespace lockstep {

// Rows of a (N, C) input 0: samples and classes of the loss and accuracy ops.
struct Rows {
  explicit Rows(const Node& node)
      : n(node.inputs[0]->shape()[0]), classes(node.inputs[0]->shape()[1]) {}
  int64_t n, classes;
};

// (N, C, inner...) as its three extents, for channel-wise broadcasts and sums.
struct ChannelGeometry {
  explicit ChannelGeometry(const Shape& shape)
      : outer(shape[0]), channels(shape[1]), inner(NumElements(shape) / (shape[0] * shape[1])) {}
  int64_t outer, channels, inner;
};

}  // namespace lockstep
