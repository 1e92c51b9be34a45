#include "core/host_buffer_pool.h"

#include "absl/strings/str_cat.h"

namespace lockstep {

absl::StatusOr<std::shared_ptr<HostBufferPool>> HostBufferPool::Create(Device device) {
  LS_ASSIGN_OR_RETURN(Backend * backend, FindBackend(device.type));
  return std::shared_ptr<HostBufferPool>(new HostBufferPool(backend, device.index));
}

// The last tensor over the pool's memory may go on any thread, one that never touched the
// device among them: the frees make the device current there first (cudaFreeHost acts on the
// current device's context, and would start one on device 0).
HostBufferPool::~HostBufferPool() {
  if (free_.empty()) return;
  backend_->MakeCurrent(index_).IgnoreError();  // a failing device fails its frees alike
  for (const auto& [bytes, data] : free_) backend_->FreeHost(data, index_);
}

absl::StatusOr<Tensor> HostBufferPool::Take(const Shape& shape, DType dtype) {
  const size_t bytes = NumElements(shape) * SizeOf(dtype);
  void* data = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(bytes);
    if (it != free_.end()) {
      data = it->second;
      free_.erase(it);
    }
  }
  if (data == nullptr) {
    auto allocate = [&]() -> absl::StatusOr<void*> {
      LS_RETURN_IF_ERROR(backend_->MakeCurrent(index_));
      return backend_->AllocateHost(bytes, index_);
    };
    absl::StatusOr<void*> fresh = allocate();
    if (!fresh.ok()) {
      return Annotate(fresh.status(),
                      absl::StrCat("allocating ", bytes, " bytes of host memory for ",
                                   backend_->name(), ":", index_));
    }
    data = *fresh;
    std::lock_guard<std::mutex> lock(mutex_);
    ++allocated_;
  }
  std::shared_ptr<HostBufferPool> pool = shared_from_this();
  auto storage = Storage::Adopt(data, bytes, Device::CPU(),
                                [pool, bytes](void* p) { pool->GiveBack(p, bytes); });
  return Tensor::Over(std::move(storage), shape, dtype);
}

int64_t HostBufferPool::allocated() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return allocated_;
}

void HostBufferPool::GiveBack(void* data, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.emplace(bytes, data);
}

}  // namespace lockstep
