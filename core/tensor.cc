#include "core/tensor.h"


#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/allocator.h"
#include "core/device_memory.h"
#ifdef LOCKSTEP_WITH_CUDA
#include "core/cuda_allocator.h"
#endif

namespace lockstep {

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string ShapeToString(const Shape& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

std::shared_ptr<Storage> Storage::Allocate(size_t bytes, Device device) {
  if (device.type == DeviceType::kCPU) {
    return std::shared_ptr<Storage>(new Storage(CpuAllocate(bytes), bytes, device, true));
  }
#ifdef LOCKSTEP_WITH_CUDA
  absl::StatusOr<void*> data = CudaAllocate(bytes, device.index);
  LS_CHECK(data.ok()) << "allocating " << bytes << " bytes on " << device.ToString() << ": "
                      << data.status();
  return std::shared_ptr<Storage>(new Storage(*data, bytes, device, true));
#else
  LS_CHECK(false) << "this build has no CUDA support; cannot allocate on " << device.ToString();
  return nullptr;
#endif
}

std::shared_ptr<Storage> Storage::Wrap(void* data, size_t bytes, Device device) {
  return std::shared_ptr<Storage>(new Storage(data, bytes, device, false));
}

Storage::~Storage() {
  if (!owned_) return;
  if (device_.type == DeviceType::kCPU) {
    CpuFree(data_);
    return;
  }
#ifdef LOCKSTEP_WITH_CUDA
  CudaFree(data_, device_.index);
#endif
}

Tensor Tensor::Empty(Shape shape, DType dtype, Device device) {
  Tensor t;
  size_t bytes = NumElements(shape) * SizeOf(dtype);
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  t.storage_ = Storage::Allocate(bytes, device);
  return t;
}

Tensor Tensor::Zeros(Shape shape, DType dtype, Device device) {
  Tensor t = Empty(std::move(shape), dtype, device);
  absl::Status zeroed = ZeroBytes(t.raw_data(), device, t.nbytes());
  LS_CHECK(zeroed.ok()) << "zeroing " << t.nbytes() << " bytes on " << device.ToString() << ": "
                        << zeroed;
  return t;
}

Tensor Tensor::Wrap(void* data, Shape shape, DType dtype, Device device) {
  Tensor t;
  size_t bytes = NumElements(shape) * SizeOf(dtype);
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  t.storage_ = Storage::Wrap(data, bytes, device);
  return t;
}

Tensor Tensor::View(size_t byte_offset, Shape shape, DType dtype) const {
  LS_CHECK(offset_ + byte_offset + NumElements(shape) * SizeOf(dtype) <= storage_->bytes())
      << "view " << ShapeToString(shape) << " at +" << byte_offset << " exceeds storage of "
      << storage_->bytes() << " bytes";
  Tensor t;
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  t.storage_ = storage_;
  t.offset_ = offset_ + byte_offset;
  return t;
}

Tensor Tensor::Clone() const {
  Tensor t = Empty(shape_, dtype_, device());
  t.CopyFrom(*this);
  return t;
}

void Tensor::CopyFrom(const Tensor& other) {
  LS_CHECK(other.nbytes() == nbytes())
      << "copy of " << ShapeToString(other.shape()) << " into " << ShapeToString(shape_);
  absl::Status copied = CopyBytes(raw_data(), device(), other.raw_data(), other.device(), nbytes());
  LS_CHECK(copied.ok()) << "copying " << nbytes() << " bytes from " << other.device().ToString()
                        << " to " << device().ToString() << ": " << copied;
}

}  // namespace lockstep
