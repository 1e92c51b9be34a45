#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"
#include "core/logging.h"
#include "core/status.h"

namespace lockstep {

using Shape = std::vector<int64_t>;

int64_t NumElements(const Shape& shape);
// "[8, 3, 224, 224]"
std::string ShapeToString(const Shape& shape);

// A block of memory shared by tensors that view it. Gives it back when the last one goes, unless
// wrapped.
class Storage {
 public:
  // Memory from the device's backend (core/backend.h); a failure names the bytes and device.
  static absl::StatusOr<std::shared_ptr<Storage>> Allocate(size_t bytes, Device device);
  static std::shared_ptr<Storage> Wrap(void* data, size_t bytes, Device device);
  // Memory that `release` gives back (to a pool, say) when the storage goes.
  static std::shared_ptr<Storage> Adopt(void* data, size_t bytes, Device device,
                                        std::function<void(void*)> release);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

 private:
  Storage(void* data, size_t bytes, Device device, std::function<void(void*)> release)
      : data_(data), bytes_(bytes), device_(device), release_(std::move(release)) {}
  void* data_;
  size_t bytes_;
  Device device_;
  std::function<void(void*)> release_;  // empty when wrapped
};

// A cheap value: shape, dtype, device and a byte offset into shared storage. Row-major.
class Tensor {
 public:
  Tensor() = default;
  // New memory, zeroed or not; fails when the device has none to give (or no backend).
  static absl::StatusOr<Tensor> Allocate(Shape shape, DType dtype, Device device, bool zeroed);
  // Allocate for tensors that cannot fail to fit (small host tensors, tests): a failure is fatal.
  static Tensor Empty(Shape shape, DType dtype, Device device = Device::CPU());
  static Tensor Zeros(Shape shape, DType dtype, Device device = Device::CPU());
  // Views memory owned elsewhere (an arena, a flat parameter buffer); does not own it.
  static Tensor Wrap(void* data, Shape shape, DType dtype, Device device = Device::CPU());
  // A tensor over `storage` from its start (Storage::Adopt).
  static Tensor Over(std::shared_ptr<Storage> storage, Shape shape, DType dtype);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int64_t dim(int i) const { return shape_[i < 0 ? i + shape_.size() : i]; }
  int rank() const { return static_cast<int>(shape_.size()); }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_ ? storage_->device() : Device::CPU(); }
  int64_t numel() const { return NumElements(shape_); }
  size_t nbytes() const { return numel() * SizeOf(dtype_); }

  void* raw_data() const { return static_cast<char*>(storage_->data()) + offset_; }
  template <typename T>
  T* data() const {
    LS_CHECK(DTypeOf<T>() == dtype_)
        << "tensor is " << DTypeName(dtype_) << ", asked for " << DTypeName(DTypeOf<T>());
    return static_cast<T*>(raw_data());
  }

  // A tensor over bytes [byte_offset, byte_offset + size) of this one's memory.
  Tensor View(size_t byte_offset, Shape shape, DType dtype) const;
  Tensor Reshape(Shape shape) const { return View(0, std::move(shape), dtype_); }
  // A new tensor with its own storage on the same device, holding the same values.
  Tensor Clone() const;
  // Copies `other`'s bytes (same size) into this tensor, between any two devices.
  void CopyFrom(const Tensor& other);

 private:
  Shape shape_;
  DType dtype_ = DType::kF32;
  std::shared_ptr<Storage> storage_;
  size_t offset_ = 0;
};

}  // namespace lockstep
