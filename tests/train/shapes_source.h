#pragma once

// The generated shapes (shapes_data.h) as a data set's source, for tests that need batches from
// the pipeline's workers: samples are (channels, size, size) float32 images, ready to batch.

#include <cstdint>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "dataset/source.h"
#include "tests/train/shapes_data.h"

namespace lockstep::train::testing {

class ShapeSource : public dataset::Source {
 public:
  ShapeSource(int64_t count, int64_t channels, int64_t size, uint64_t seed)
      : data_(MakeShapeImages(count, channels, size, seed)) {}

  int64_t size() const override { return data_.labels.numel(); }
  absl::StatusOr<dataset::Sample> Load(int64_t index) const override {
    Shape shape = data_.images.shape();  // (count, C, H, W)
    shape.erase(shape.begin());
    Tensor image = Tensor::Empty(shape, DType::kF32);
    const auto* images = static_cast<const char*>(data_.images.raw_data());
    std::memcpy(image.raw_data(), images + index * image.nbytes(), image.nbytes());
    return dataset::Sample{image, data_.labels.data<int32_t>()[index]};
  }
  std::string Describe(int64_t index) const override { return absl::StrCat("shape ", index); }

 private:
  ShapeImages data_;
};

}  // namespace lockstep::train::testing
