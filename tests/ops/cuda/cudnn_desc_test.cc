// The fields of the cuDNN descriptors, computed from the graph's shapes and attributes: plain
// values, checked without a GPU. Creating and reading back cuDNN descriptors needs no device
// either (only the library), so the built descriptors are checked here too.

#include "ops/cuda/cudnn_desc.h"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

namespace lockstep::cuda {
namespace {

TEST(CudnnDescTest, NchwStridesAndVectors) {
  absl::StatusOr<TensorDescFields> x = NchwFields({8, 3, 5, 7}, DType::kF32);
  ASSERT_TRUE(x.ok()) << x.status();
  EXPECT_EQ(x->dtype, CUDNN_DATA_FLOAT);
  EXPECT_EQ(x->dims, (std::array<int, 4>{8, 3, 5, 7}));
  EXPECT_EQ(x->strides, (std::array<int, 4>{105, 35, 7, 1}));
  absl::StatusOr<TensorDescFields> channels = NchwFields({64}, DType::kF32);
  ASSERT_TRUE(channels.ok());
  EXPECT_EQ(channels->dims, (std::array<int, 4>{1, 64, 1, 1}));
  absl::StatusOr<TensorDescFields> matrix = NchwFields({4, 10}, DType::kF16);
  ASSERT_TRUE(matrix.ok());
  EXPECT_EQ(matrix->dtype, CUDNN_DATA_HALF);
  EXPECT_EQ(matrix->dims, (std::array<int, 4>{4, 10, 1, 1}));
  EXPECT_EQ(matrix->strides, (std::array<int, 4>{10, 1, 1, 1}));
}

TEST(CudnnDescTest, RejectsWhatCudnnCannotDescribe) {
  EXPECT_FALSE(NchwFields({2, 3, 4}, DType::kF32).ok());
  EXPECT_FALSE(NchwFields({2, 3, 4, 5}, DType::kI64).ok());
  EXPECT_FALSE(FilterFields({8, 3, 3}, DType::kF32).ok());
}

TEST(CudnnDescTest, ConvolutionFromAttributes) {
  const Attrs attrs = {{"stride", std::vector<int64_t>{2, 1}},
                       {"padding", std::vector<int64_t>{3, 0}},
                       {"dilation", std::vector<int64_t>{1, 2}},
                       {"groups", int64_t{4}}};
  absl::StatusOr<ConvDescFields> conv = ConvFields(attrs, DType::kF32);
  ASSERT_TRUE(conv.ok()) << conv.status();
  EXPECT_EQ(conv->stride, (std::array<int, 2>{2, 1}));
  EXPECT_EQ(conv->padding, (std::array<int, 2>{3, 0}));
  EXPECT_EQ(conv->dilation, (std::array<int, 2>{1, 2}));
  EXPECT_EQ(conv->groups, 4);
  EXPECT_EQ(conv->compute, CUDNN_DATA_FLOAT);
  EXPECT_EQ(conv->math, CUDNN_DEFAULT_MATH);  // TF32 allowed, as PyTorch allows it
  absl::StatusOr<FilterDescFields> filter = FilterFields({64, 16, 7, 7}, DType::kF32);
  ASSERT_TRUE(filter.ok());
  EXPECT_EQ(filter->dims, (std::array<int, 4>{64, 16, 7, 7}));
}

TEST(CudnnDescTest, SixteenBitConvolutionsAccumulateInFloat) {
  const Attrs attrs = {{"stride", std::vector<int64_t>{1, 1}},
                       {"padding", std::vector<int64_t>{1, 1}},
                       {"dilation", std::vector<int64_t>{1, 1}},
                       {"groups", int64_t{1}}};
  absl::StatusOr<ConvDescFields> half = ConvFields(attrs, DType::kF16);
  ASSERT_TRUE(half.ok()) << half.status();
  EXPECT_EQ(half->compute, CUDNN_DATA_FLOAT);
  absl::StatusOr<ConvDescFields> bf16 = ConvFields(attrs, DType::kBF16);
  ASSERT_TRUE(bf16.ok()) << bf16.status();
  EXPECT_EQ(bf16->compute, CUDNN_DATA_FLOAT);
  absl::StatusOr<ConvDescFields> f64 = ConvFields(attrs, DType::kF64);
  ASSERT_TRUE(f64.ok()) << f64.status();
  EXPECT_EQ(f64->compute, CUDNN_DATA_DOUBLE);
}

// The built convolution descriptor holds the fields, and cuDNN's output shape is the op's:
// (OH, OW) = (H + 2 p - d (K - 1) - 1) / s + 1.
TEST(CudnnDescTest, BuiltConvolutionMatchesTheOpShape) {
  const Attrs attrs = {{"stride", std::vector<int64_t>{2, 1}},
                       {"padding", std::vector<int64_t>{3, 2}},
                       {"dilation", std::vector<int64_t>{1, 2}},
                       {"groups", int64_t{2}}};
  absl::StatusOr<ConvDescFields> fields = ConvFields(attrs, DType::kF32);
  ASSERT_TRUE(fields.ok()) << fields.status();
  absl::StatusOr<ConvDesc> conv = ConvDesc::Create(*fields);
  ASSERT_TRUE(conv.ok()) << conv.status();
  std::array<int, 2> pad, stride, dilation;
  cudnnConvolutionMode_t mode;
  cudnnDataType_t compute;
  ASSERT_EQ(cudnnGetConvolution2dDescriptor(conv->get(), &pad[0], &pad[1], &stride[0], &stride[1],
                                            &dilation[0], &dilation[1], &mode, &compute),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(pad, (std::array<int, 2>{3, 2}));
  EXPECT_EQ(stride, (std::array<int, 2>{2, 1}));
  EXPECT_EQ(dilation, (std::array<int, 2>{1, 2}));
  EXPECT_EQ(mode, CUDNN_CROSS_CORRELATION);  // what deep learning calls convolution
  int groups = 0;
  ASSERT_EQ(cudnnGetConvolutionGroupCount(conv->get(), &groups), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(groups, 2);
  cudnnMathType_t math;
  ASSERT_EQ(cudnnGetConvolutionMathType(conv->get(), &math), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(math, CUDNN_DEFAULT_MATH);

  absl::StatusOr<TensorDesc> x = TensorDesc::Nchw({2, 8, 15, 10}, DType::kF32);  // (N, C, H, W)
  ASSERT_TRUE(x.ok()) << x.status();
  absl::StatusOr<FilterDescFields> w_fields = FilterFields({6, 4, 7, 3}, DType::kF32);
  ASSERT_TRUE(w_fields.ok()) << w_fields.status();
  absl::StatusOr<FilterDesc> w = FilterDesc::Create(*w_fields);  // (O, C / groups, KH, KW)
  ASSERT_TRUE(w.ok()) << w.status();
  absl::StatusOr<std::array<int, 4>> y = ConvForwardOutputDims(*conv, *x, *w);
  ASSERT_TRUE(y.ok()) << y.status();
  // OH = (15 + 6 - 7) / 2 + 1 = 8, OW = (10 + 4 - 5) / 1 + 1 = 10.
  EXPECT_EQ(*y, (std::array<int, 4>{2, 6, 8, 10}));
}

TEST(CudnnDescTest, BuiltFilterHoldsTheFields) {
  absl::StatusOr<FilterDescFields> fields = FilterFields({64, 16, 7, 5}, DType::kF32);
  ASSERT_TRUE(fields.ok()) << fields.status();
  absl::StatusOr<FilterDesc> w = FilterDesc::Create(*fields);
  ASSERT_TRUE(w.ok()) << w.status();
  cudnnDataType_t dtype;
  cudnnTensorFormat_t format;
  std::array<int, 4> dims;
  ASSERT_EQ(
      cudnnGetFilter4dDescriptor(w->get(), &dtype, &format, &dims[0], &dims[1], &dims[2], &dims[3]),
      CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(dtype, CUDNN_DATA_FLOAT);
  EXPECT_EQ(format, CUDNN_TENSOR_NCHW);
  EXPECT_EQ(dims, (std::array<int, 4>{64, 16, 7, 5}));
}

// NHWC (channels innermost): the logical (N, C, H, W) dims with strides of (N, H, W, C) storage.
TEST(CudnnDescTest, NhwcKeepsTheDimsAndPutsChannelsInnermost) {
  absl::StatusOr<TensorDescFields> x = NhwcFields({8, 3, 5, 7}, DType::kBF16);
  ASSERT_TRUE(x.ok()) << x.status();
  EXPECT_EQ(x->dtype, CUDNN_DATA_BFLOAT16);
  EXPECT_EQ(x->dims, (std::array<int, 4>{8, 3, 5, 7}));
  EXPECT_EQ(x->strides, (std::array<int, 4>{105, 1, 21, 3}));
  absl::StatusOr<TensorDescFields> plain = ActivationFields({8, 3, 5, 7}, DType::kF16, false);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->dtype, CUDNN_DATA_HALF);
  EXPECT_EQ(plain->strides, (std::array<int, 4>{105, 35, 7, 1}));
  absl::StatusOr<TensorDescFields> nhwc = ActivationFields({8, 3, 5, 7}, DType::kF16, true);
  ASSERT_TRUE(nhwc.ok());
  EXPECT_EQ(nhwc->strides, x->strides);
  EXPECT_FALSE(NhwcFields({8, 3}, DType::kBF16).ok());
}

// 16-bit convolutions ask for tensor cores (float32 accumulation), float32 keeps the default
// (TF32 where allowed); filters in NHWC are cuDNN's KRSC.
TEST(CudnnDescTest, SixteenBitConvolutionsUseTensorOpsAndKrscFilters) {
  const Attrs attrs = {{"stride", std::vector<int64_t>{1, 1}},
                       {"padding", std::vector<int64_t>{1, 1}},
                       {"dilation", std::vector<int64_t>{1, 1}},
                       {"groups", int64_t{1}}};
  for (DType dtype : {DType::kBF16, DType::kF16}) {
    absl::StatusOr<ConvDescFields> conv = ConvFields(attrs, dtype);
    ASSERT_TRUE(conv.ok()) << conv.status();
    EXPECT_EQ(conv->math, CUDNN_TENSOR_OP_MATH) << DTypeName(dtype);
    EXPECT_EQ(conv->compute, CUDNN_DATA_FLOAT) << DTypeName(dtype);
  }
  absl::StatusOr<FilterDescFields> krsc = FilterFields({64, 16, 3, 3}, DType::kBF16, true);
  ASSERT_TRUE(krsc.ok()) << krsc.status();
  EXPECT_EQ(krsc->format, CUDNN_TENSOR_NHWC);
  EXPECT_EQ(krsc->dtype, CUDNN_DATA_BFLOAT16);
  EXPECT_EQ(krsc->dims, (std::array<int, 4>{64, 16, 3, 3}));
  absl::StatusOr<FilterDescFields> plain = FilterFields({64, 16, 3, 3}, DType::kF16);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->format, CUDNN_TENSOR_NCHW);
}

// The built NHWC descriptors read back as set, and cuDNN's output shape is the op's in NHWC too.
TEST(CudnnDescTest, BuiltNhwcConvolutionMatchesTheOpShape) {
  const Attrs attrs = {{"stride", std::vector<int64_t>{2, 2}},
                       {"padding", std::vector<int64_t>{1, 1}},
                       {"dilation", std::vector<int64_t>{1, 1}},
                       {"groups", int64_t{1}}};
  absl::StatusOr<ConvDescFields> fields = ConvFields(attrs, DType::kF16);
  ASSERT_TRUE(fields.ok()) << fields.status();
  absl::StatusOr<ConvDesc> conv = ConvDesc::Create(*fields);
  ASSERT_TRUE(conv.ok()) << conv.status();
  cudnnMathType_t math;
  ASSERT_EQ(cudnnGetConvolutionMathType(conv->get(), &math), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(math, CUDNN_TENSOR_OP_MATH);

  absl::StatusOr<TensorDescFields> x_fields = NhwcFields({4, 16, 9, 9}, DType::kF16);
  ASSERT_TRUE(x_fields.ok());
  absl::StatusOr<TensorDesc> x = TensorDesc::Create(*x_fields);
  ASSERT_TRUE(x.ok()) << x.status();
  cudnnDataType_t dtype;
  std::array<int, 4> dims, strides;
  ASSERT_EQ(cudnnGetTensor4dDescriptor(x->get(), &dtype, &dims[0], &dims[1], &dims[2], &dims[3],
                                       &strides[0], &strides[1], &strides[2], &strides[3]),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(dtype, CUDNN_DATA_HALF);
  EXPECT_EQ(dims, (std::array<int, 4>{4, 16, 9, 9}));
  EXPECT_EQ(strides, (std::array<int, 4>{1296, 1, 144, 16}));

  absl::StatusOr<FilterDescFields> w_fields = FilterFields({32, 16, 3, 3}, DType::kF16, true);
  ASSERT_TRUE(w_fields.ok());
  absl::StatusOr<FilterDesc> w = FilterDesc::Create(*w_fields);
  ASSERT_TRUE(w.ok()) << w.status();
  cudnnTensorFormat_t format;
  std::array<int, 4> w_dims;
  ASSERT_EQ(cudnnGetFilter4dDescriptor(w->get(), &dtype, &format, &w_dims[0], &w_dims[1],
                                       &w_dims[2], &w_dims[3]),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(format, CUDNN_TENSOR_NHWC);
  EXPECT_EQ(w_dims, (std::array<int, 4>{32, 16, 3, 3}));
  absl::StatusOr<std::array<int, 4>> y = ConvForwardOutputDims(*conv, *x, *w);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(*y, (std::array<int, 4>{4, 32, 5, 5}));  // (9 + 2 - 3) / 2 + 1
}

TEST(CudnnDescTest, BadConvolutionAttributesAreErrors) {
  const Attrs attrs = {{"stride", std::vector<int64_t>{0, 1}},
                       {"padding", std::vector<int64_t>{0, 0}},
                       {"dilation", std::vector<int64_t>{1, 1}},
                       {"groups", int64_t{1}}};
  absl::StatusOr<ConvDescFields> conv = ConvFields(attrs, DType::kF32);
  ASSERT_FALSE(conv.ok());
  EXPECT_NE(conv.status().message().find("stride"), std::string::npos) << conv.status();
  Attrs no_groups = attrs;
  no_groups.Set("stride", std::vector<int64_t>{1, 1});
  no_groups.Set("groups", int64_t{0});
  EXPECT_FALSE(ConvFields(no_groups, DType::kF32).ok());
}

}  // namespace
}  // namespace lockstep::cuda
