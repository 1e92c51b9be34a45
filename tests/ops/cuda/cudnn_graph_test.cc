// Which forward convolutions go through cuDNN's graph API, and the tensors it is given: plain
// values, checked without a GPU (the plans themselves run in LowPrecisionCudaTest.Convolutions).

#include "ops/cuda/cudnn_graph.h"

#include <gtest/gtest.h>

#include <array>

namespace lockstep::cuda {
namespace {

ConvDescFields Ungrouped() { return {.padding = {3, 3}, .stride = {2, 2}}; }

TEST(CudnnGraphTest, ActivationsKeepTheirDimsAndStrides) {
  absl::StatusOr<TensorDescFields> x = NhwcFields({8, 3, 224, 224}, DType::kF16);
  ASSERT_TRUE(x.ok()) << x.status();
  const GraphTensorFields graph = GraphTensor(*x);
  EXPECT_EQ(graph.dtype, CUDNN_DATA_HALF);
  EXPECT_EQ(graph.dims, (std::array<int64_t, 4>{8, 3, 224, 224}));
  EXPECT_EQ(graph.strides, (std::array<int64_t, 4>{224 * 224 * 3, 1, 224 * 3, 3}));
}

TEST(CudnnGraphTest, FiltersGetTheStridesOfTheirFormat) {
  absl::StatusOr<FilterDescFields> krsc = FilterFields({64, 3, 7, 7}, DType::kBF16, true);
  ASSERT_TRUE(krsc.ok()) << krsc.status();
  EXPECT_EQ(GraphTensor(*krsc).dims, (std::array<int64_t, 4>{64, 3, 7, 7}));
  EXPECT_EQ(GraphTensor(*krsc).strides, (std::array<int64_t, 4>{147, 1, 21, 3}));
  absl::StatusOr<FilterDescFields> kcrs = FilterFields({64, 3, 7, 7}, DType::kF32);
  ASSERT_TRUE(kcrs.ok()) << kcrs.status();
  EXPECT_EQ(GraphTensor(*kcrs).strides, (std::array<int64_t, 4>{147, 49, 7, 1}));
}

// The first layer of an image model in 16 bits NHWC, and nothing else.
TEST(CudnnGraphTest, OnlySixteenBitFirstLayersUseTheGraph) {
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    for (int64_t channels : {3, 4}) {
      absl::StatusOr<TensorDescFields> x = NhwcFields({8, channels, 32, 32}, dtype);
      ASSERT_TRUE(x.ok()) << x.status();
      EXPECT_TRUE(ConvForwardUsesGraph(*x, true, Ungrouped())) << channels;
    }
  }
  absl::StatusOr<TensorDescFields> wide = NhwcFields({8, 8, 32, 32}, DType::kF16);
  absl::StatusOr<TensorDescFields> f32 = NchwFields({8, 3, 32, 32}, DType::kF32);
  absl::StatusOr<TensorDescFields> plain = NchwFields({8, 3, 32, 32}, DType::kF16);
  absl::StatusOr<TensorDescFields> stem = NhwcFields({8, 4, 32, 32}, DType::kF16);
  ASSERT_TRUE(wide.ok() && f32.ok() && plain.ok() && stem.ok());
  EXPECT_FALSE(ConvForwardUsesGraph(*wide, true, Ungrouped()));
  EXPECT_FALSE(ConvForwardUsesGraph(*f32, false, Ungrouped()));
  EXPECT_FALSE(ConvForwardUsesGraph(*plain, false, Ungrouped()));
  ConvDescFields grouped = Ungrouped();
  grouped.groups = 2;
  EXPECT_FALSE(ConvForwardUsesGraph(*stem, true, grouped));
}

}  // namespace
}  // namespace lockstep::cuda
