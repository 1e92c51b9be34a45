#include "core/tensor.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/backend.h"
#include "core/device_memory.h"

namespace lockstep {

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string ShapeToString(const Shape& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

absl::StatusOr<std::shared_ptr<Storage>> Storage::Allocate(size_t bytes, Device device) {
  LS_ASSIGN_OR_RETURN(Backend * backend, FindBackend(device.type));
  absl::StatusOr<void*> data = backend->Allocate(bytes, device.index);
  if (!data.ok()) {
    return Annotate(data.status(),
                    absl::StrCat("allocating ", bytes, " bytes on ", device.ToString()));
  }
  return Adopt(*data, bytes, device,
               [device](void* p) { BackendOf(device).Free(p, device.index); });
}

std::shared_ptr<Storage> Storage::Wrap(void* data, size_t bytes, Device device) {
  return std::shared_ptr<Storage>(new Storage(data, bytes, device, nullptr));
}

std::shared_ptr<Storage> Storage::Adopt(void* data, size_t bytes, Device device,
                                        std::function<void(void*)> release) {
  return std::shared_ptr<Storage>(new Storage(data, bytes, device, std::move(release)));
}

Storage::~Storage() {
  if (release_) release_(data_);
}

absl::StatusOr<Tensor> Tensor::Allocate(Shape shape, DType dtype, Device device, bool zeroed) {
  Tensor t;
  size_t bytes = NumElements(shape) * SizeOf(dtype);
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  LS_ASSIGN_OR_RETURN(t.storage_, Storage::Allocate(bytes, device));
  if (zeroed) {
    LS_RETURN_IF_ERROR(Annotate(ZeroBytes(t.raw_data(), device, bytes),
                                absl::StrCat("zeroing ", bytes, " bytes on ", device.ToString())));
  }
  return t;
}

Tensor Tensor::Empty(Shape shape, DType dtype, Device device) {
  absl::StatusOr<Tensor> t = Allocate(std::move(shape), dtype, device, /*zeroed=*/false);
  LS_CHECK(t.ok()) << t.status();
  return *std::move(t);
}

Tensor Tensor::Zeros(Shape shape, DType dtype, Device device) {
  absl::StatusOr<Tensor> t = Allocate(std::move(shape), dtype, device, /*zeroed=*/true);
  LS_CHECK(t.ok()) << t.status();
  return *std::move(t);
}

Tensor Tensor::Wrap(void* data, Shape shape, DType dtype, Device device) {
  const size_t bytes = NumElements(shape) * SizeOf(dtype);
  return Over(Storage::Wrap(data, bytes, device), std::move(shape), dtype);
}

Tensor Tensor::Over(std::shared_ptr<Storage> storage, Shape shape, DType dtype) {
  LS_CHECK(NumElements(shape) * SizeOf(dtype) <= storage->bytes())
      << DTypeName(dtype) << ShapeToString(shape) << " over a storage of " << storage->bytes()
      << " bytes";
  Tensor t;
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  t.storage_ = std::move(storage);
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
