#pragma once

#include <cstddef>
#include <cstdint>

namespace lockstep {

// Alignment of every CPU buffer: a cache line, and what AVX-512 loads want.
inline constexpr size_t kCpuAlignment = 64;

// Bytes rounded up to a whole number of `alignment` blocks: offsets inside planned buffers (the
// alignment of the buffer's backend), scratch slots of CPU kernels.
constexpr size_t AlignUp(size_t bytes, size_t alignment = kCpuAlignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

// 64-byte aligned host memory, nullptr when there is none. Counts allocations so tests can prove
// a training step allocates nothing.
void* CpuAllocate(size_t bytes);
void CpuFree(void* ptr);

struct AllocatorStats {
  int64_t allocations = 0;  // calls to CpuAllocate since start
  int64_t live_bytes = 0;   // bytes allocated and not yet freed
};
AllocatorStats CpuAllocatorStats();

}  // namespace lockstep
