#include "core/host_buffer_pool.h"

#include <gtest/gtest.h>

namespace lockstep {
namespace {

TEST(HostBufferPoolTest, ABufferGoesBackWithItsLastTensorAndIsTakenAgain) {
  std::shared_ptr<HostBufferPool> pool = *HostBufferPool::Create(Device::CPU());
  absl::StatusOr<Tensor> first = pool->Take({4, 3}, DType::kF32);
  ASSERT_TRUE(first.ok()) << first.status();
  void* const memory = first->raw_data();
  Tensor view = first->View(16, {2}, DType::kF32);
  *first = Tensor();
  // The view still holds the buffer: a request of its size gets new memory.
  Tensor second = *pool->Take({12}, DType::kF32);
  EXPECT_NE(second.raw_data(), memory);
  EXPECT_EQ(pool->allocated(), 2);
  view = Tensor();
  // 48 bytes again, in another shape and dtype: the first buffer, recycled.
  Tensor third = *pool->Take({48}, DType::kU8);
  EXPECT_EQ(third.raw_data(), memory);
  EXPECT_EQ(third.device(), Device::CPU());
  // Another size is another buffer.
  Tensor fourth = *pool->Take({5}, DType::kF32);
  EXPECT_EQ(pool->allocated(), 3);
}

TEST(HostBufferPoolTest, ATensorKeepsItsPoolAlive) {
  Tensor kept;
  {
    std::shared_ptr<HostBufferPool> pool = *HostBufferPool::Create(Device::CPU());
    kept = *pool->Take({8}, DType::kI32);
  }
  for (int i = 0; i < 8; ++i) kept.data<int32_t>()[i] = i;
  EXPECT_EQ(kept.data<int32_t>()[7], 7);
  kept = Tensor();  // gives the buffer back to the pool, which then goes
}

TEST(HostBufferPoolTest, ADeviceWithoutBackendIsAnError) {
  const auto type = static_cast<DeviceType>(static_cast<int>(DeviceType::kFirstOther) + 5);
  EXPECT_FALSE(HostBufferPool::Create(Device{type, 0}).ok());
}

}  // namespace
}  // namespace lockstep
