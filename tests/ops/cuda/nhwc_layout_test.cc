// The CUDA backend's NHWC layout without a GPU: which values may use it, its size, the host
// permutation the backend's reads and writes use, the layouts the CUDA kernels choose, and that
// every 16-bit kernel the mixed-precision graphs need is registered.

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/layout.h"
#include "graph/kernel.h"
#include "graph/op_registry.h"
#include "ops/cuda/cuda_layouts.h"

namespace lockstep::cuda {
namespace {

TEST(NhwcLayoutTest, SixteenBitFourDimensionalValuesOnly) {
  const Layout nhwc = NhwcLayout();
  EXPECT_NE(nhwc, Layout::kPlain);
  EXPECT_STREQ(LayoutName(nhwc), "nhwc");
  Layout parsed;
  ASSERT_TRUE(ParseLayout("nhwc", &parsed));
  EXPECT_EQ(parsed, nhwc);
  EXPECT_TRUE(LayoutEligible(nhwc, {8, 3, 5, 7}, DType::kBF16));
  EXPECT_TRUE(LayoutEligible(nhwc, {8, 3, 5, 7}, DType::kF16));
  EXPECT_FALSE(LayoutEligible(nhwc, {8, 3, 5, 7}, DType::kF32));  // float32 stays NCHW
  EXPECT_FALSE(LayoutEligible(nhwc, {8, 3, 5}, DType::kBF16));
  EXPECT_FALSE(LayoutEligible(nhwc, {64}, DType::kF16));
}

TEST(NhwcLayoutTest, TakesThePlainByteCount) {
  const Layout nhwc = NhwcLayout();
  EXPECT_EQ(LayoutBytes(nhwc, {8, 3, 5, 7}, DType::kBF16), 8u * 3 * 5 * 7 * 2);
  EXPECT_EQ(LayoutBytes(nhwc, {2, 17, 1, 3}, DType::kF16),
            LayoutBytes(Layout::kPlain, {2, 17, 1, 3}, DType::kF16));
}

// Element (n, c, h, w) of the plain value lands at ((n * H + h) * W + w) * C + c, and back.
TEST(NhwcLayoutTest, HostPermutationRoundTrips) {
  const Shape shape = {2, 3, 4, 5};
  std::vector<uint16_t> plain(120), nhwc(120), back(120);
  std::iota(plain.begin(), plain.end(), uint16_t{0});
  PermuteToNhwc(plain.data(), nhwc.data(), shape, sizeof(uint16_t));
  const auto plain_index = [](int n, int c, int h, int w) { return ((n * 3 + c) * 4 + h) * 5 + w; };
  const auto nhwc_index = [](int n, int c, int h, int w) { return ((n * 4 + h) * 5 + w) * 3 + c; };
  EXPECT_EQ(nhwc[nhwc_index(1, 2, 3, 4)], plain[plain_index(1, 2, 3, 4)]);
  EXPECT_EQ(nhwc[nhwc_index(0, 1, 2, 0)], plain[plain_index(0, 1, 2, 0)]);
  EXPECT_EQ(nhwc[1], plain[plain_index(0, 1, 0, 0)]);  // channels innermost
  PermuteFromNhwc(nhwc.data(), back.data(), shape, sizeof(uint16_t));
  EXPECT_EQ(back, plain);
}

// The backend offers NHWC for values the ranks share (16-bit weights at O3) and names its
// reorder op.
TEST(NhwcLayoutTest, TheCudaBackendReordersAndSharesNhwc) {
  absl::StatusOr<Backend*> backend = FindBackend(DeviceType::kCUDA);
  ASSERT_TRUE(backend.ok()) << backend.status();
  EXPECT_EQ((*backend)->reorder_op(), "Reorder");
  EXPECT_EQ((*backend)->SharedLayoutOffer(), std::vector<Layout>{NhwcLayout()});
}

// A node of `op` over values of the given types, built by hand (no shape inference: only the
// kernels' layout choice is asked).
class HandNode {
 public:
  HandNode(const std::string& op, const std::vector<TensorType>& inputs,
           const std::vector<TensorType>& outputs) {
    absl::StatusOr<const OpDef*> def = OpRegistry::Global().Find(op);
    LS_CHECK(def.ok()) << def.status();
    node_.op = *def;
    for (const TensorType& type : inputs) {
      inputs_.push_back(std::make_unique<Value>());
      inputs_.back()->type = type;
      node_.inputs.push_back(inputs_.back().get());
    }
    for (const TensorType& type : outputs) {
      node_.outputs.push_back(std::make_unique<Value>());
      node_.outputs.back()->type = type;
    }
  }
  // What the node's CUDA kernel wants, with producers plain and `shared` shared.
  LayoutChoice Choose(const std::vector<Layout>& shared) const {
    absl::StatusOr<const KernelDef*> def = KernelRegistry::Global().Find(node_, DeviceType::kCUDA);
    LS_CHECK(def.ok()) << def.status();
    return (*def)->layouts(node_, std::vector<Layout>(node_.inputs.size(), Layout::kPlain),
                           SharedLayouts{shared});
  }

 private:
  Node node_;
  std::vector<std::unique_ptr<Value>> inputs_;
};

// 16-bit convolutions read NHWC activations and KRSC weights (where the job shares the layout),
// float32 ones stay plain.
TEST(NhwcLayoutTest, ConvolutionsChooseNhwcForSixteenBitValues) {
  const Layout nhwc = NhwcLayout(), plain = Layout::kPlain;
  const TensorType x = {{8, 16, 9, 9}, DType::kBF16}, w = {{32, 16, 3, 3}, DType::kBF16};
  const TensorType y = {{8, 32, 9, 9}, DType::kBF16};
  const LayoutChoice forward = HandNode("Conv2D", {x, w}, {y}).Choose({nhwc});
  EXPECT_EQ(forward.inputs, (std::vector<Layout>{nhwc, nhwc}));
  EXPECT_EQ(forward.outputs, (std::vector<Layout>{nhwc}));
  const LayoutChoice unshared = HandNode("Conv2D", {x, w}, {y}).Choose({});
  EXPECT_EQ(unshared.inputs, (std::vector<Layout>{nhwc, plain}));
  const LayoutChoice filter = HandNode("Conv2DBackpropFilter", {x, y}, {w}).Choose({nhwc});
  EXPECT_EQ(filter.inputs, (std::vector<Layout>{nhwc, nhwc}));
  EXPECT_EQ(filter.outputs, (std::vector<Layout>{nhwc}));
  const TensorType x32 = {{8, 16, 9, 9}, DType::kF32}, w32 = {{32, 16, 3, 3}, DType::kF32};
  const LayoutChoice f32 =
      HandNode("Conv2D", {x32, w32}, {{{8, 32, 9, 9}, DType::kF32}}).Choose({nhwc});
  EXPECT_EQ(f32.inputs, (std::vector<Layout>{plain, plain}));
  EXPECT_EQ(f32.outputs, (std::vector<Layout>{plain}));
}

// Batch norm and pooling: the 16-bit data NHWC, batch norm's float32 (C) vectors and a max
// pool's int32 argmax plain; global pooling's (N, C, 1, 1) side plain; float32 pools plain.
TEST(NhwcLayoutTest, BatchNormAndPoolingAreNhwc) {
  const Layout nhwc = NhwcLayout(), plain = Layout::kPlain;
  const TensorType x = {{8, 16, 9, 9}, DType::kF16}, c = {{16}, DType::kF32};
  const LayoutChoice norm = HandNode("BatchNorm", {x, c, c, c, c}, {x, c, c, c, c}).Choose({nhwc});
  EXPECT_EQ(norm.inputs, (std::vector<Layout>{nhwc, plain, plain, plain, plain}));
  EXPECT_EQ(norm.outputs, (std::vector<Layout>{nhwc, plain, plain, plain, plain}));
  const TensorType pooled = {{8, 16, 1, 1}, DType::kF16};
  const LayoutChoice global = HandNode("GlobalAvgPool", {x}, {pooled}).Choose({nhwc});
  EXPECT_EQ(global.inputs, (std::vector<Layout>{nhwc}));
  EXPECT_EQ(global.outputs, (std::vector<Layout>{plain}));
  const LayoutChoice global_grad = HandNode("GlobalAvgPoolGrad", {pooled}, {x}).Choose({nhwc});
  EXPECT_EQ(global_grad.inputs, (std::vector<Layout>{plain}));
  EXPECT_EQ(global_grad.outputs, (std::vector<Layout>{nhwc}));

  const TensorType y = {{8, 16, 5, 5}, DType::kBF16}, argmax = {{8, 16, 5, 5}, DType::kI32};
  const TensorType xb = {{8, 16, 9, 9}, DType::kBF16};
  const LayoutChoice max = HandNode("MaxPoolWithArgmax", {xb}, {y, argmax}).Choose({});
  EXPECT_EQ(max.inputs, (std::vector<Layout>{nhwc}));
  EXPECT_EQ(max.outputs, (std::vector<Layout>{nhwc, plain}));
  const LayoutChoice back = HandNode("MaxPoolGradWithArgmax", {y, argmax}, {xb}).Choose({});
  EXPECT_EQ(back.inputs, (std::vector<Layout>{nhwc, plain}));
  EXPECT_EQ(back.outputs, (std::vector<Layout>{nhwc}));
  const LayoutChoice average = HandNode("AvgPoolGrad", {y}, {xb}).Choose({});
  EXPECT_EQ(average.outputs, (std::vector<Layout>{nhwc}));
  const TensorType x32 = {{8, 16, 9, 9}, DType::kF32};
  const LayoutChoice f32 = HandNode("MaxPool", {x32}, {{{8, 16, 5, 5}, DType::kF32}}).Choose({});
  EXPECT_EQ(f32.inputs, (std::vector<Layout>{plain}));
  EXPECT_EQ(f32.outputs, (std::vector<Layout>{plain}));
}

// Cast gives a 16-bit 4-D output NHWC, permuting as it converts; float32, other shapes and
// other dtypes plain.
TEST(NhwcLayoutTest, CastToSixteenBitsGivesNhwc) {
  const Layout nhwc = NhwcLayout(), plain = Layout::kPlain;
  const Shape image = {8, 3, 9, 9};
  const LayoutChoice to_bf16 =
      HandNode("Cast", {{image, DType::kF32}}, {{image, DType::kBF16}}).Choose({});
  EXPECT_EQ(to_bf16.inputs, (std::vector<Layout>{plain}));
  EXPECT_EQ(to_bf16.outputs, (std::vector<Layout>{nhwc}));
  const LayoutChoice to_f32 =
      HandNode("Cast", {{image, DType::kF16}}, {{image, DType::kF32}}).Choose({});
  EXPECT_EQ(to_f32.outputs, (std::vector<Layout>{plain}));
  const LayoutChoice matrix =
      HandNode("Cast", {{{8, 27}, DType::kF32}}, {{{8, 27}, DType::kBF16}}).Choose({});
  EXPECT_EQ(matrix.outputs, (std::vector<Layout>{plain}));
  const LayoutChoice to_int =
      HandNode("Cast", {{image, DType::kBF16}}, {{image, DType::kI32}}).Choose({});
  EXPECT_EQ(to_int.inputs, (std::vector<Layout>{plain}));
  EXPECT_EQ(to_int.outputs, (std::vector<Layout>{plain}));
}

// Every op of a mixed-precision ResNet has CUDA kernels for both 16-bit dtypes.
TEST(NhwcLayoutTest, SixteenBitKernelsAreRegistered) {
  const KernelRegistry& registry = KernelRegistry::Global();
  for (const char* op : {"Add",
                         "AddRelu",
                         "AddReluGrad",
                         "Relu",
                         "ReluGrad",
                         "Scale",
                         "Fill",
                         "BiasAdd",
                         "BiasAddGrad",
                         "Cast",
                         "Conv2D",
                         "Conv2DBackpropInput",
                         "Conv2DBackpropFilter",
                         "BatchNorm",
                         "BatchNormRelu",
                         "BatchNormGrad",
                         "BatchNormReluGrad",
                         "BatchNormInference",
                         "MaxPool",
                         "MaxPoolWithArgmax",
                         "MaxPoolGrad",
                         "MaxPoolGradWithArgmax",
                         "AvgPool",
                         "AvgPoolGrad",
                         "GlobalAvgPool",
                         "GlobalAvgPoolGrad",
                         "MatMul",
                         "Reorder"}) {
    for (DType dtype : {DType::kBF16, DType::kF16}) {
      EXPECT_TRUE(registry.Has(op, DeviceType::kCUDA, dtype)) << op << "/" << DTypeName(dtype);
    }
  }
}

}  // namespace
}  // namespace lockstep::cuda
