// Backend::NormalizeImages on the CPU backend: uint8 (N, H, W, C) batches into the float32
// (N, C, H, W) values the dataset's Normalize and HWC2CHW transforms give each image, bit for bit
// (the CUDA kernel shares its per-element math, ops/image_input_math.h, and is compared with
// this one in ops_cuda_test); bad arguments are refused.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/backend.h"
#include "dataset/transforms.h"

namespace lockstep {
namespace {

// Pixels from a fixed linear congruential sequence: every value 0..255 turns up.
Tensor Pixels(const Shape& nhwc) {
  Tensor images = Tensor::Empty(nhwc, DType::kU8);
  uint32_t state = 12345;
  for (int64_t i = 0; i < images.numel(); ++i) {
    state = state * 1664525u + 1013904223u;
    images.data<uint8_t>()[i] = static_cast<uint8_t>(state >> 24);
  }
  return images;
}

// Image `n` of the batch through the dataset's transforms.
Tensor ThroughTheTransforms(const Tensor& images, int64_t n, const std::vector<float>& mean,
                            const std::vector<float>& std) {
  const Shape image_shape = {images.dim(1), images.dim(2), images.dim(3)};
  Tensor image = Tensor::Empty(image_shape, DType::kU8);
  std::memcpy(image.raw_data(), images.data<uint8_t>() + n * image.numel(), image.nbytes());
  const dataset::TransformContext context(0, 0, 0, 0, nullptr);
  absl::StatusOr<Tensor> normalized = dataset::Normalize(mean, std)->Apply(image, context);
  EXPECT_TRUE(normalized.ok()) << normalized.status();
  absl::StatusOr<Tensor> chw = dataset::HWC2CHW()->Apply(*normalized, context);
  EXPECT_TRUE(chw.ok()) << chw.status();
  return *chw;
}

TEST(ImageInputTest, MatchesNormalizeAndHwc2chwBitForBit) {
  Backend& cpu = BackendOf(Device::CPU());
  const std::vector<std::vector<float>> means = {{127.5f}, {123.675f, 116.28f, 103.53f}};
  const std::vector<std::vector<float>> stds = {{127.5f}, {58.395f, 57.12f, 57.375f}};
  for (size_t k = 0; k < means.size(); ++k) {
    const int64_t channels = static_cast<int64_t>(means[k].size());
    const Tensor images = Pixels({3, 5, 7, channels});
    const Tensor out = Tensor::Empty({3, channels, 5, 7}, DType::kF32);
    ASSERT_TRUE(cpu.NormalizeImages(images, out, means[k], stds[k]).ok());
    const int64_t per_image = channels * 5 * 7;
    for (int64_t n = 0; n < 3; ++n) {
      const Tensor expected = ThroughTheTransforms(images, n, means[k], stds[k]);
      EXPECT_EQ(
          std::memcmp(expected.raw_data(), out.data<float>() + n * per_image, expected.nbytes()), 0)
          << channels << " channel(s), image " << n;
    }
  }
}

TEST(ImageInputTest, RefusesBadArguments) {
  Backend& cpu = BackendOf(Device::CPU());
  const Tensor images = Pixels({2, 4, 4, 3});
  const Tensor out = Tensor::Empty({2, 3, 4, 4}, DType::kF32);
  const std::vector<float> three = {1, 2, 3};
  EXPECT_TRUE(cpu.NormalizeImages(images, out, three, three).ok());
  const auto refused = [](const absl::Status& status, const char* words) {
    EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
    EXPECT_NE(status.message().find(words), std::string::npos) << status;
  };
  refused(cpu.NormalizeImages(images, Tensor::Empty({2, 4, 4, 3}, DType::kF32), three, three),
          "u8 (N, H, W, C) into f32 (N, C, H, W), got u8[2, 4, 4, 3] into f32[2, 4, 4, 3]");
  refused(cpu.NormalizeImages(Tensor::Empty({2, 4, 4, 3}, DType::kF32), out, three, three),
          "got f32[2, 4, 4, 3]");
  refused(cpu.NormalizeImages(images, out, {1}, {1}), "needs one mean and one nonzero std");
  refused(cpu.NormalizeImages(images, out, three, {1, 0, 1}), "nonzero std");
}

}  // namespace
}  // namespace lockstep
