#pragma once

// Helpers of the dataset tests: temporary directories, images with known content, small sources.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/tensor.h"
#include "dataset/source.h"
#include "tests/testing/temp_dir.h"

namespace lockstep::dataset::testing {

using ::lockstep::testing::TempDir;

// (height, width, channels) uint8 of smooth gradients (JPEG keeps it close); `shift` varies it.
Tensor GradientImage(int64_t height, int64_t width, int64_t channels = 3, int shift = 0);

// Writes bytes to `path`, creating its parent directories.
void WriteBytes(const std::string& path, std::string_view bytes);
void WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes);
// A JPEG of `image` at `path` (4:4:4 chroma, so tolerances stay tight).
void WriteJpeg(const std::string& path, const Tensor& image, int quality = 95);
std::vector<uint8_t> ReadBytes(const std::string& path);

// root/class_<c>/img_<i>.jpg for every class and index: GradientImage(size, size) shifted by
// 10 * c + i.
void MakeImageFolder(const std::string& root, int classes, int per_class, int64_t size = 16);

// Samples held in memory; sample i is images[i] with label labels[i].
class VectorSource : public Source {
 public:
  VectorSource(std::vector<Tensor> images, std::vector<int32_t> labels)
      : images_(std::move(images)), labels_(std::move(labels)) {}
  int64_t size() const override { return static_cast<int64_t>(images_.size()); }
  absl::StatusOr<Sample> Load(int64_t index) const override {
    return Sample{images_[index], labels_[index]};
  }
  std::string Describe(int64_t index) const override { return absl::StrCat("vector[", index, "]"); }

 private:
  std::vector<Tensor> images_;
  std::vector<int32_t> labels_;
};

// n (1, 1, 1) uint8 images whose value (and label) is their index.
std::vector<Tensor> IndexImages(int n);

}  // namespace lockstep::dataset::testing
