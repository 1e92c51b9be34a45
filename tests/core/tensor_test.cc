#include "core/tensor.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "core/allocator.h"

namespace lockstep {
namespace {

TEST(TensorTest, StorageIsAlignedAndCounted) {
  AllocatorStats before = CpuAllocatorStats();
  Tensor t = Tensor::Empty({3, 5}, DType::kF32);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % kCpuAlignment, 0u);
  EXPECT_EQ(t.nbytes(), 60u);
  AllocatorStats after = CpuAllocatorStats();
  EXPECT_EQ(after.allocations, before.allocations + 1);
  EXPECT_EQ(after.live_bytes, before.live_bytes + 60);
}

TEST(TensorTest, ViewsShareStorage) {
  Tensor flat = Tensor::Zeros({10}, DType::kF32);
  Tensor view = flat.View(4 * sizeof(float), {2, 3}, DType::kF32);
  view.data<float>()[0] = 7.0f;
  EXPECT_EQ(flat.data<float>()[4], 7.0f);
  EXPECT_EQ(view.dim(-1), 3);
  EXPECT_EQ(ShapeToString(view.shape()), "[2, 3]");
}

TEST(TensorTest, CloneIsIndependent) {
  Tensor a = Tensor::Zeros({4}, DType::kI32);
  Tensor b = a.Clone();
  b.data<int32_t>()[0] = 3;
  EXPECT_EQ(a.data<int32_t>()[0], 0);
}

TEST(TensorTest, DTypeNamesRoundTrip) {
  for (DType d : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64, DType::kI32, DType::kI64,
                  DType::kU8, DType::kBool}) {
    DType parsed;
    ASSERT_TRUE(ParseDType(DTypeName(d), &parsed));
    EXPECT_EQ(parsed, d);
  }
  DType unused;
  EXPECT_FALSE(ParseDType("f128", &unused));
}

}  // namespace
}  // namespace lockstep
