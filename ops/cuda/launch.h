#pragma once

// Launch sizes of the element-wise and per-row kernels, without absl or cuDNN so that .cu files
// can include it.

#include <cstdint>

namespace lockstep::cuda {

// Threads per block of the element-wise kernels, and the blocks that cover n elements with
// grid-stride loops (capped: a loop covers the rest).
inline constexpr int kThreadsPerBlock = 256;
inline unsigned BlocksFor(int64_t n) {
  const int64_t blocks = (n + kThreadsPerBlock - 1) / kThreadsPerBlock;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks > 65535 * 8 ? 65535 * 8 : blocks);
}

}  // namespace lockstep::cuda
