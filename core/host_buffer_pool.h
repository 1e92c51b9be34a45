#pragma once

// Recycled host memory for the batches a device is fed from, from that device's backend
// (Backend::AllocateHost: page-locked on CUDA, so that copies run on a stream while the host goes
// on). Allocating such memory is slow and waits for the device, so a buffer goes back to the pool
// when the last tensor over it goes, and the next request of the same size takes it again. Any
// thread may take buffers or drop the last of them: the pool makes its device current on that
// thread before it allocates or frees (Backend::MakeCurrent).
//
//   std::shared_ptr<HostBufferPool> pool = HostBufferPool::Create(Device::CUDA(0));
//   LS_ASSIGN_OR_RETURN(Tensor images, pool->Take({128, 224, 224, 3}, DType::kU8));

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "core/backend.h"
#include "core/tensor.h"

namespace lockstep {

class HostBufferPool : public std::enable_shared_from_this<HostBufferPool> {
 public:
  // Host memory for `device`; fails when the device type has no backend.
  static absl::StatusOr<std::shared_ptr<HostBufferPool>> Create(Device device);
  ~HostBufferPool();
  HostBufferPool(const HostBufferPool&) = delete;
  HostBufferPool& operator=(const HostBufferPool&) = delete;

  // A host tensor (device CPU) over a recycled buffer, or a new one when none of its size is
  // free. Its memory keeps the pool alive until it goes back.
  absl::StatusOr<Tensor> Take(const Shape& shape, DType dtype);
  // Buffers the pool has allocated so far, in use or free.
  int64_t allocated() const;

 private:
  HostBufferPool(Backend* backend, int index) : backend_(backend), index_(index) {}
  void GiveBack(void* data, size_t bytes);

  Backend* backend_;
  int index_;
  mutable std::mutex mutex_;
  std::multimap<size_t, void*> free_;  // by size in bytes
  int64_t allocated_ = 0;
};

}  // namespace lockstep
