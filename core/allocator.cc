#include "core/allocator.h"

#include <atomic>
#include <cstdlib>

#include "core/logging.h"

namespace lockstep {
namespace {

std::atomic<int64_t> g_allocations{0};
std::atomic<int64_t> g_live_bytes{0};

// The size is kept in front of the aligned block so CpuFree can update live_bytes.
constexpr size_t kHeader = kCpuAlignment;

}  // namespace

void* CpuAllocate(size_t bytes) {
  size_t total = kHeader + ((bytes + kCpuAlignment - 1) / kCpuAlignment) * kCpuAlignment;
  void* raw = std::aligned_alloc(kCpuAlignment, total);
  if (raw == nullptr) return nullptr;
  *static_cast<size_t*>(raw) = bytes;
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  g_live_bytes.fetch_add(static_cast<int64_t>(bytes), std::memory_order_relaxed);
  return static_cast<char*>(raw) + kHeader;
}

void CpuFree(void* ptr) {
  if (ptr == nullptr) return;
  void* raw = static_cast<char*>(ptr) - kHeader;
  g_live_bytes.fetch_sub(static_cast<int64_t>(*static_cast<size_t*>(raw)),
                         std::memory_order_relaxed);
  std::free(raw);
}

AllocatorStats CpuAllocatorStats() { return {g_allocations.load(), g_live_bytes.load()}; }

}  // namespace lockstep
