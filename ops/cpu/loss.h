#pragma once

// The CPU's softmax cross-entropy and its gradient over float32 (N, C) rows, plain: registered for
// the CPU in ops/cpu/loss.cc, and for the tests' backend, so that one loop and one label check
// serve both.

#include "graph/kernel.h"
#include "ops/kernel_bases.h"

namespace lockstep::cpu {

// (logits (N, C), labels (N)) -> (loss [], probs (N, C)); fails on a label outside [0, C).
class SoftmaxCrossEntropyKernel : public RowsKernel {
 public:
  using RowsKernel::RowsKernel;
  absl::Status Run(const KernelIO& io) override;
};

// (probs (N, C), labels (N), dloss []) -> dlogits (N, C); fails on a label outside [0, C).
class SoftmaxCrossEntropyGradKernel : public RowsKernel {
 public:
  using RowsKernel::RowsKernel;
  absl::Status Run(const KernelIO& io) override;
};

}  // namespace lockstep::cpu
