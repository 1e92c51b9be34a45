#pragma once

#include <cstddef>
#include <cstdint>

namespace lockstep {

// Alignment of every CPU buffer: a cache line, and what AVX-512 loads want.
inline constexpr size_t kCpuAlignment = 64;

// Bytes rounded up to a whole number of kCpuAlignment blocks: offsets inside planned buffers.
constexpr size_t AlignUp(size_t bytes) {
  return (bytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
}

// 64-byte aligned host memory. Counts allocations so tests can prove a training step
// allocates nothing.
void* CpuAllocate(size_t bytes);
void CpuFree(void* ptr);

struct AllocatorStats {
  int64_t allocations = 0;  // calls to CpuAllocate since start
  int64_t live_bytes = 0;   // bytes allocated and not yet freed
};
AllocatorStats CpuAllocatorStats();

}  // namespace lockstep
