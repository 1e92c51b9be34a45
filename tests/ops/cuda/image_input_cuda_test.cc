// The CUDA backend's NormalizeImages against the CPU backend's, bit for bit (skipped without a
// GPU); the CPU's is checked against the dataset's transforms in ops_test.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/backend.h"
#include "tests/testing/backend_compare.h"

namespace lockstep {
namespace {

TEST(ImageInputCudaTest, MatchesTheCpuBitForBit) {
  LS_SKIP_WITHOUT_GPU();
  const Shape nhwc = {4, 33, 65, 3};
  const std::vector<float> mean = {123.675f, 116.28f, 103.53f};
  const std::vector<float> std = {58.395f, 57.12f, 57.375f};
  Tensor images = Tensor::Empty(nhwc, DType::kU8);
  for (int64_t i = 0; i < images.numel(); ++i) {
    images.data<uint8_t>()[i] = static_cast<uint8_t>(i * 7919 % 256);
  }
  const Shape nchw = {4, 3, 33, 65};
  Tensor expected = Tensor::Empty(nchw, DType::kF32);
  ASSERT_TRUE(BackendOf(Device::CPU()).NormalizeImages(images, expected, mean, std).ok());

  absl::StatusOr<Tensor> on_gpu = Tensor::Allocate(nhwc, DType::kU8, Device::CUDA(0), false);
  absl::StatusOr<Tensor> out = Tensor::Allocate(nchw, DType::kF32, Device::CUDA(0), false);
  ASSERT_TRUE(on_gpu.ok() && out.ok());
  on_gpu->CopyFrom(images);
  ASSERT_TRUE(BackendOf(Device::CUDA(0)).NormalizeImages(*on_gpu, *out, mean, std).ok());
  Tensor back = Tensor::Empty(nchw, DType::kF32);
  back.CopyFrom(*out);
  EXPECT_EQ(std::memcmp(back.raw_data(), expected.raw_data(), expected.nbytes()), 0);

  // Images still on the host are refused, naming both devices.
  absl::Status host = BackendOf(Device::CUDA(0)).NormalizeImages(images, *out, mean, std);
  EXPECT_TRUE(absl::IsInvalidArgument(host)) << host;
}

}  // namespace
}  // namespace lockstep
