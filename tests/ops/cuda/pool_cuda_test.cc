// Pooling on CUDA against the CPU kernels (skipped without a GPU).

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/testing/backend_compare.h"

namespace lockstep {
namespace {

using testing::ExpectCudaMatchesCpu;
using testing::ExpectCudaOpMatchesCpu;

Attrs Window(int64_t kernel, int64_t stride, int64_t padding) {
  return {{"kernel", std::vector<int64_t>{kernel, kernel}},
          {"stride", std::vector<int64_t>{stride, stride}},
          {"padding", std::vector<int64_t>{padding, padding}}};
}

const Shape kX = {2, 4, 9, 9};

TEST(PoolCudaTest, MaxPoolAndGradient) {
  LS_SKIP_WITHOUT_GPU();
  for (const Attrs& window : {Window(3, 2, 1), Window(2, 2, 0), Window(3, 1, 1)}) {
    ExpectCudaOpMatchesCpu("MaxPool", {{"x", kX}}, window);
    ExpectCudaMatchesCpu({{"x", kX}}, [&](Builder& b, const std::vector<Value*>& in) {
      Value* y = b.Op1("MaxPool", in, window);
      return std::vector<Value*>{b.Op1("MaxPoolGrad", {in[0], y}, window)};
    });
  }
}

// Ties: equal values in a window send the gradient to the first, on both backends.
TEST(PoolCudaTest, ArgmaxPairRoutesTiesToTheFirstMaximum) {
  LS_SKIP_WITHOUT_GPU();
  std::vector<float> ties(NumElements(kX));
  for (size_t i = 0; i < ties.size(); ++i) ties[i] = static_cast<float>(i % 3);
  for (const auto& x : {testing::GradCheckInput{.name = "x", .shape = kX},
                        testing::GradCheckInput{.name = "x", .shape = kX, .values = ties}}) {
    ExpectCudaMatchesCpu({x}, [](Builder& b, const std::vector<Value*>& in) {
      const Attrs window = Window(3, 2, 1);
      std::vector<Value*> pooled = b.Op("MaxPoolWithArgmax", in, window);
      if (pooled.size() != 2) return pooled;
      Attrs grad = window;
      grad.Set("input_shape", kX);
      Value* dx = b.Op1("MaxPoolGradWithArgmax", {pooled[0], pooled[1]}, grad);
      return std::vector<Value*>{pooled[0], dx};
    });
  }
}

TEST(PoolCudaTest, AvgPoolBothPaddingRules) {
  LS_SKIP_WITHOUT_GPU();
  for (bool include : {true, false}) {
    Attrs window = Window(3, 2, 1);
    window.Set("count_include_pad", include);
    ExpectCudaOpMatchesCpu("AvgPool", {{"x", kX}}, window);
    Attrs grad = window;
    grad.Set("input_shape", kX);
    ExpectCudaOpMatchesCpu("AvgPoolGrad", {{"dy", {2, 4, 5, 5}}}, grad);
  }
}

TEST(PoolCudaTest, GlobalAvgPoolAndGradient) {
  LS_SKIP_WITHOUT_GPU();
  ExpectCudaOpMatchesCpu("GlobalAvgPool", {{"x", {3, 16, 7, 7}}});
  ExpectCudaOpMatchesCpu("GlobalAvgPoolGrad", {{"dy", {3, 16, 1, 1}}},
                         {{"input_shape", Shape{3, 16, 7, 7}}});
}

}  // namespace
}  // namespace lockstep
