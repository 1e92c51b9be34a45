#include "tests/dataset/test_util.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "dataset/encode.h"

namespace lockstep::dataset::testing {

namespace fs = std::filesystem;

Tensor GradientImage(int64_t height, int64_t width, int64_t channels, int shift) {
  Tensor image = Tensor::Empty({height, width, channels}, DType::kU8);
  uint8_t* p = image.data<uint8_t>();
  for (int64_t y = 0; y < height; ++y) {
    for (int64_t x = 0; x < width; ++x) {
      for (int64_t c = 0; c < channels; ++c) {
        *p++ =
            static_cast<uint8_t>(10 + 80 * x / width + 50 * y / height + 30 * c + (shift * 7) % 50);
      }
    }
  }
  return image;
}

void WriteBytes(const std::string& path, std::string_view bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

void WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  WriteBytes(path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

void WriteJpeg(const std::string& path, const Tensor& image, int quality) {
  absl::StatusOr<std::vector<uint8_t>> jpeg =
      EncodeJpeg(image, {.quality = quality, .subsample_chroma = false});
  ASSERT_TRUE(jpeg.ok()) << jpeg.status();
  WriteBytes(path, *jpeg);
}

std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void MakeImageFolder(const std::string& root, int classes, int per_class, int64_t size) {
  for (int c = 0; c < classes; ++c) {
    for (int i = 0; i < per_class; ++i) {
      WriteJpeg(absl::StrCat(root, "/class_", c, "/img_", i, ".jpg"),
                GradientImage(size, size, 3, 10 * c + i));
    }
  }
}

std::vector<Tensor> IndexImages(int n) {
  std::vector<Tensor> images;
  for (int i = 0; i < n; ++i) {
    images.push_back(Tensor::Empty({1, 1, 1}, DType::kU8));
    *images.back().data<uint8_t>() = static_cast<uint8_t>(i);
  }
  return images;
}

}  // namespace lockstep::dataset::testing
