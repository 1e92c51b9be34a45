#include "train/data.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/rng.h"

namespace lockstep::train {

absl::Status DataSource::ResetAt(int64_t epoch, int64_t start_batch) {
  LS_RETURN_IF_ERROR(Reset(epoch));
  Batch skipped;
  for (int64_t i = 0; i < start_batch; ++i) {
    LS_ASSIGN_OR_RETURN(bool more, Next(&skipped));
    if (!more) break;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<InMemoryDataSource>> InMemoryDataSource::Create(
    Tensor images, Tensor labels, InMemoryOptions options) {
  if (images.rank() != 4 || images.dtype() != DType::kF32) {
    return absl::InvalidArgumentError(absl::StrCat("images must be f32 (M, C, H, W), got ",
                                                   DTypeName(images.dtype()),
                                                   ShapeToString(images.shape())));
  }
  if (labels.shape() != Shape{images.dim(0)} || labels.dtype() != DType::kI32) {
    return absl::InvalidArgumentError(
        absl::StrCat("labels must be i32 [", images.dim(0), "] to match the images, got ",
                     DTypeName(labels.dtype()), ShapeToString(labels.shape())));
  }
  if (options.batch_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch_size must be positive, got ", options.batch_size));
  }
  return std::unique_ptr<InMemoryDataSource>(
      new InMemoryDataSource(std::move(images), std::move(labels), options));
}

InMemoryDataSource::InMemoryDataSource(Tensor images, Tensor labels, InMemoryOptions options)
    : images_(std::move(images)), labels_(std::move(labels)), options_(options) {
  Shape shape = images_.shape();
  shape[0] = options_.batch_size;
  buffer_.images = Tensor::Empty(shape, DType::kF32);
  buffer_.labels = Tensor::Empty({options_.batch_size}, DType::kI32);
  order_.resize(size());
  std::iota(order_.begin(), order_.end(), 0);
}

int64_t InMemoryDataSource::batches_per_epoch() const {
  const int64_t b = options_.batch_size;
  return options_.drop_remainder ? size() / b : (size() + b - 1) / b;
}

absl::Status InMemoryDataSource::Reset(int64_t epoch) {
  position_ = 0;
  std::iota(order_.begin(), order_.end(), 0);
  if (!options_.shuffle) return absl::OkStatus();
  // Fisher-Yates, swap i drawn from counter i of the epoch's stream.
  const Philox rng(options_.seed, static_cast<uint64_t>(epoch));
  for (int64_t i = size() - 1; i > 0; --i) {
    std::swap(order_[i], order_[rng.UniformInt(i, i + 1)]);
  }
  return absl::OkStatus();
}

absl::Status InMemoryDataSource::ResetAt(int64_t epoch, int64_t start_batch) {
  LS_RETURN_IF_ERROR(Reset(epoch));
  position_ = std::min(size(), std::max<int64_t>(0, start_batch) * options_.batch_size);
  return absl::OkStatus();
}

absl::StatusOr<bool> InMemoryDataSource::Next(Batch* batch) {
  const int64_t n = std::min(options_.batch_size, size() - position_);
  if (n <= 0 || (options_.drop_remainder && n < options_.batch_size)) return false;
  const size_t sample_bytes = images_.nbytes() / size();
  const auto* images = static_cast<const char*>(images_.raw_data());
  auto* out = static_cast<char*>(buffer_.images.raw_data());
  const int32_t* labels = labels_.data<int32_t>();
  int32_t* out_labels = buffer_.labels.data<int32_t>();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t sample = order_[position_ + i];
    std::memcpy(out + i * sample_bytes, images + sample * sample_bytes, sample_bytes);
    out_labels[i] = labels[sample];
  }
  position_ += n;
  Shape shape = buffer_.images.shape();
  shape[0] = n;
  batch->images = buffer_.images.View(0, shape, DType::kF32);
  batch->labels = buffer_.labels.View(0, {n}, DType::kI32);
  return true;
}

}  // namespace lockstep::train
