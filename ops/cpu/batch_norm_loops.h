#pragma once

// Batch normalization of bf16 and f16 activations as the CPU's own loops, for where oneDNN would
// not compute the dtype natively (bf16 without AVX512-BF16, f16 always): they read and write the
// 16-bit data directly and compute in float32, so the memory-bound normalization moves half the
// bytes of the float32 kernel instead of converting float32 copies around it. They take the
// layouts of the oneDNN kernels (plain, nChw8c, nChw16c) and their conventions: biased saved
// variance, float32 statistics, scale and shift in float32 or the data's dtype. The fused ReLU's
// mask is their own (a byte per element, 1 where the value passes), read only by their backward.

#include <memory>

#include "graph/kernel.h"

namespace lockstep::cpu {

// The kernel of a BatchNorm, BatchNormRelu, BatchNormGrad, BatchNormReluGrad or
// BatchNormInference node whose x is bf16 or f16.
absl::StatusOr<std::unique_ptr<Kernel>> MakeBatchNormLoops(const Node& node);

// The running averages of a training BatchNorm node, which the oneDNN kernels keep too.
class RunningStatistics {
 public:
  explicit RunningStatistics(const Node& node);
  // From the batch mean and biased variance (outputs 1, 2) and the old running statistics
  // (inputs 3, 4) into outputs 3, 4 (in place).
  void Update(const KernelIO& io) const;

 private:
  int64_t channels_;
  double per_channel_;  // values a channel's statistics are taken over
  float momentum_;
};

}  // namespace lockstep::cpu
