// Conv2D and its backprops on CUDA (cuDNN) against the CPU kernels (oneDNN), on random inputs.
// cuDNN may use TF32 tensor cores for float32, as PyTorch allows by default, which rounds the
// operands to 10 mantissa bits: results agree to about 1e-3 of their magnitude, not 1e-6.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/testing/backend_compare.h"

namespace lockstep {
namespace {

using testing::ExpectCudaOpMatchesCpu;
using testing::GradCheckInput;

constexpr double kTf32Tolerance = 5e-3;

struct ConvCase {
  Shape x, w;
  std::vector<int64_t> stride = {1, 1}, padding = {0, 0}, dilation = {1, 1};
  int64_t groups = 1;

  Attrs attrs() const {
    return {{"stride", stride}, {"padding", padding}, {"dilation", dilation}, {"groups", groups}};
  }
  // (N, O, OH, OW) as the op defines it.
  Shape y() const {
    Shape out = {x[0], w[0], 0, 0};
    for (int i = 0; i < 2; ++i) {
      const int64_t extent = dilation[i] * (w[2 + i] - 1) + 1;
      out[2 + i] = (x[2 + i] + 2 * padding[i] - extent) / stride[i] + 1;
    }
    return out;
  }
};

void ExpectAllDirectionsMatch(const ConvCase& c) {
  SCOPED_TRACE(ShapeToString(c.x) + " * " + ShapeToString(c.w));
  ExpectCudaOpMatchesCpu("Conv2D", {{"x", c.x}, {"w", c.w}}, c.attrs(), kTf32Tolerance);
  Attrs data = c.attrs();
  data.Set("input_shape", c.x);
  ExpectCudaOpMatchesCpu("Conv2DBackpropInput", {{"dy", c.y()}, {"w", c.w}}, data, kTf32Tolerance);
  Attrs filter = c.attrs();
  filter.Set("filter_shape", c.w);
  ExpectCudaOpMatchesCpu("Conv2DBackpropFilter", {{"x", c.x}, {"dy", c.y()}}, filter,
                         kTf32Tolerance);
}

TEST(ConvCudaTest, ThreeByThreePadded) {
  LS_SKIP_WITHOUT_GPU();
  ExpectAllDirectionsMatch({.x = {2, 8, 9, 9}, .w = {16, 8, 3, 3}, .padding = {1, 1}});
}

TEST(ConvCudaTest, OneByOneStrided) {
  LS_SKIP_WITHOUT_GPU();
  ExpectAllDirectionsMatch({.x = {2, 16, 8, 8}, .w = {32, 16, 1, 1}, .stride = {2, 2}});
}

TEST(ConvCudaTest, ResNetStem) {
  LS_SKIP_WITHOUT_GPU();
  ExpectAllDirectionsMatch(
      {.x = {2, 3, 32, 32}, .w = {64, 3, 7, 7}, .stride = {2, 2}, .padding = {3, 3}});
}

TEST(ConvCudaTest, GroupedDepthwiseAndDilated) {
  LS_SKIP_WITHOUT_GPU();
  ExpectAllDirectionsMatch({.x = {2, 8, 7, 7}, .w = {8, 2, 3, 3}, .padding = {1, 1}, .groups = 4});
  ExpectAllDirectionsMatch({.x = {2, 8, 7, 7}, .w = {8, 1, 3, 3}, .padding = {1, 1}, .groups = 8});
  ExpectAllDirectionsMatch(
      {.x = {2, 4, 11, 11}, .w = {8, 4, 3, 3}, .padding = {2, 2}, .dilation = {2, 2}});
}

TEST(ConvCudaTest, ResNetBlockShape) {
  LS_SKIP_WITHOUT_GPU();
  ExpectAllDirectionsMatch({.x = {4, 64, 14, 14}, .w = {64, 64, 3, 3}, .padding = {1, 1}});
}

}  // namespace
}  // namespace lockstep
