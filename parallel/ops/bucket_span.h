#pragma once

// A fused AllReduce node's inputs (one bucket of gradients) lie back to back in the flat
// gradient buffer, so one collective over their byte range reduces them all without a copy.

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "graph/graph.h"

namespace lockstep::parallel {

// The inputs of `node` as one span of memory, when they are back to back in one region, each at
// the first multiple of the memory plan's `alignment` after the last (alignment padding between
// them is zeros in the gradient buffer and reduces to zeros).
struct Span {
  bool contiguous = false;
  size_t first_input = 0;  // the input at the lowest offset
  int64_t elements = 0;
};
Span ContiguousSpan(const Node& node, size_t alignment);

// What one run of the node reduces: the whole span as one tensor when contiguous, else every
// output on its own.
std::vector<Tensor> BucketTensors(const Span& span, const std::vector<Tensor>& outputs);

}  // namespace lockstep::parallel
