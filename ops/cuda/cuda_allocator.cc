#include "ops/cuda/cuda_allocator.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "ops/cuda/cuda_status.h"

namespace lockstep {
namespace {

constexpr size_t kSmallRound = 512;
constexpr size_t kLargeRound = size_t{2} << 20;  // 2 MiB

size_t RoundUp(size_t bytes) {
  size_t round = bytes <= kLargeRound ? kSmallRound : kLargeRound;
  return (std::max<size_t>(bytes, 1) + round - 1) / round * round;
}

struct DevicePool {
  std::mutex mutex;
  std::map<size_t, std::vector<void*>> free_blocks;  // by rounded size
  std::unordered_map<void*, size_t> sizes;           // every live block's rounded size
  CudaAllocatorStats stats;
};

DevicePool& Pool(int device) {
  static std::mutex mutex;
  static auto* pools = new std::map<int, DevicePool>();
  std::lock_guard<std::mutex> lock(mutex);
  return (*pools)[device];
}

}  // namespace

absl::StatusOr<void*> CudaAllocate(size_t bytes, int device) {
  size_t rounded = RoundUp(bytes);
  DevicePool& pool = Pool(device);
  std::lock_guard<std::mutex> lock(pool.mutex);
  auto it = pool.free_blocks.find(rounded);
  void* ptr = nullptr;
  if (it != pool.free_blocks.end() && !it->second.empty()) {
    ptr = it->second.back();
    it->second.pop_back();
    pool.stats.cached_bytes -= static_cast<int64_t>(rounded);
  } else {
    CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
    CUDA_RETURN_IF_ERROR(cudaMalloc(&ptr, rounded));
    ++pool.stats.cuda_mallocs;
  }
  pool.sizes[ptr] = rounded;
  pool.stats.live_bytes += static_cast<int64_t>(rounded);
  return ptr;
}

void CudaFree(void* ptr, int device) {
  if (ptr == nullptr) return;
  DevicePool& pool = Pool(device);
  std::lock_guard<std::mutex> lock(pool.mutex);
  size_t rounded = pool.sizes.at(ptr);
  pool.sizes.erase(ptr);
  pool.free_blocks[rounded].push_back(ptr);
  pool.stats.live_bytes -= static_cast<int64_t>(rounded);
  pool.stats.cached_bytes += static_cast<int64_t>(rounded);
}

CudaAllocatorStats GetCudaAllocatorStats(int device) {
  DevicePool& pool = Pool(device);
  std::lock_guard<std::mutex> lock(pool.mutex);
  return pool.stats;
}

}  // namespace lockstep
