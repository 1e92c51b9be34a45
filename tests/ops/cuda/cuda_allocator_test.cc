#include "ops/cuda/cuda_allocator.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/tensor.h"
#include "ops/cuda/cuda_status.h"

namespace lockstep {
namespace {

TEST(CudaAllocatorTest, FreedBlocksAreReusedWithoutCudaMalloc) {
  if (!CudaAvailable()) GTEST_SKIP() << "no CUDA device on this machine";
  absl::StatusOr<void*> first = CudaAllocate(1000, 0);
  ASSERT_TRUE(first.ok()) << first.status();
  CudaFree(*first, 0);
  int64_t mallocs = GetCudaAllocatorStats(0).cuda_mallocs;
  absl::StatusOr<void*> second = CudaAllocate(900, 0);  // same 512-byte rounding class
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, *first);
  EXPECT_EQ(GetCudaAllocatorStats(0).cuda_mallocs, mallocs);
  CudaFree(*second, 0);
}

TEST(CudaAllocatorTest, DeviceTensorRoundTrip) {
  if (!CudaAvailable()) GTEST_SKIP() << "no CUDA device on this machine";
  std::vector<float> host = {1, 2, 3, 4, 5, 6}, back(6);
  Tensor device = Tensor::Empty({2, 3}, DType::kF32, Device::CUDA(0));
  ASSERT_EQ(cudaMemcpy(device.raw_data(), host.data(), 24, cudaMemcpyHostToDevice), cudaSuccess);
  Tensor view = device.View(8, {4}, DType::kF32);
  ASSERT_EQ(cudaMemcpy(back.data(), view.raw_data(), 16, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back[0], 3.0f);
  EXPECT_EQ(back[3], 6.0f);
}

}  // namespace
}  // namespace lockstep
