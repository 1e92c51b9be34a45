#pragma once

// Device memory with caching: a freed block goes back to a free list of its rounded size and
// the next request of that size reuses it, so a training step never calls cudaMalloc.

#include <cstddef>
#include <cstdint>

#include "core/status.h"

namespace lockstep {

// A failure names the bytes and the device.
absl::StatusOr<void*> CudaAllocate(size_t bytes, int device);
void CudaFree(void* ptr, int device);

struct CudaAllocatorStats {
  int64_t cuda_mallocs = 0;  // real cudaMalloc calls since start
  int64_t live_bytes = 0;    // rounded bytes handed out and not yet freed
  int64_t cached_bytes = 0;  // rounded bytes held in free lists
};
CudaAllocatorStats GetCudaAllocatorStats(int device);

}  // namespace lockstep
