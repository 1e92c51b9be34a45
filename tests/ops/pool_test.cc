#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "tests/testing/grad_check.h"

namespace lockstep {
namespace {

using testing::ExpectOpGradientsMatch;
using testing::GradCheckInput;
using testing::RunForward;

struct Window {
  std::vector<int64_t> kernel;
  std::vector<int64_t> stride = {1, 1};
  std::vector<int64_t> padding = {0, 0};

  Attrs attrs() const { return {{"kernel", kernel}, {"stride", stride}, {"padding", padding}}; }
  int64_t OutputSize(const Shape& x, int i) const {
    return (x[2 + i] + 2 * padding[i] - kernel[i]) / stride[i] + 1;
  }
};

// Distinct values 0.05 apart in random order: a +-0.01 step never changes which is the maximum.
std::vector<float> DistinctValues(const Shape& shape, uint32_t seed) {
  std::vector<float> values(NumElements(shape));
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.05f * static_cast<float>(i) - 1.0f;
  std::shuffle(values.begin(), values.end(), std::mt19937(seed));
  return values;
}

// Calls visit(output index, cells) for every output element, with the flat indices of the x
// elements inside its window (padding left out) in row-major order.
template <typename Visit>
void ForEachWindow(const Shape& x, const Window& w, Visit visit) {
  const int64_t oh = w.OutputSize(x, 0), ow = w.OutputSize(x, 1);
  for (int64_t plane = 0; plane < x[0] * x[1]; ++plane)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        std::vector<int64_t> cells;
        for (int64_t ki = 0; ki < w.kernel[0]; ++ki)
          for (int64_t kj = 0; kj < w.kernel[1]; ++kj) {
            const int64_t h = i * w.stride[0] - w.padding[0] + ki;
            const int64_t v = j * w.stride[1] - w.padding[1] + kj;
            if (h >= 0 && h < x[2] && v >= 0 && v < x[3])
              cells.push_back((plane * x[2] + h) * x[3] + v);
          }
        visit((plane * oh + i) * ow + j, cells);
      }
}

enum class Reduce { kMax, kAvgIncludePad, kAvgExcludePad };

std::vector<double> ReferencePool(const std::vector<float>& x, const Shape& shape, const Window& w,
                                  Reduce reduce) {
  std::vector<double> y(shape[0] * shape[1] * w.OutputSize(shape, 0) * w.OutputSize(shape, 1));
  ForEachWindow(shape, w, [&](int64_t out, const std::vector<int64_t>& cells) {
    double max = -std::numeric_limits<double>::infinity(), sum = 0.0;
    for (int64_t cell : cells) {
      max = std::max<double>(max, x[cell]);
      sum += x[cell];
    }
    const double count = reduce == Reduce::kAvgIncludePad
                             ? static_cast<double>(w.kernel[0] * w.kernel[1])
                             : static_cast<double>(cells.size());
    y[out] = reduce == Reduce::kMax ? max : sum / count;
  });
  return y;
}

void ExpectNear(const std::vector<float>& actual, const std::vector<double>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    ASSERT_NEAR(actual[i], expected[i], 1e-5 * std::max(1.0, std::abs(expected[i])))
        << "element " << i;
  }
}

std::vector<float> RunOp(const std::string& op, const Shape& shape, const std::vector<float>& x,
                         const Attrs& attrs) {
  std::vector<std::vector<float>> outputs =
      RunForward({{.name = "x", .shape = shape, .values = x}},
                 [&](Builder& b, const std::vector<Value*>& in) { return b.Op(op, in, attrs); });
  return outputs.empty() ? std::vector<float>{} : outputs[0];
}

// C = 3 stays plain, C = 16 runs in the native blocked layout.
const Shape kPlainShape = {2, 3, 7, 6};
const Shape kBlockedShape = {2, 16, 5, 5};
const Window kOverlapping{.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}};
const Window kTiling{.kernel = {2, 2}, .stride = {2, 2}};
const Window kAsymmetric{.kernel = {3, 2}, .stride = {1, 2}, .padding = {1, 0}};

TEST(PoolOpTest, MaxPoolForwardTreatsPaddingAsMinusInfinity) {
  for (const Shape& shape : {kPlainShape, kBlockedShape}) {
    for (const Window& w : {kOverlapping, kTiling, kAsymmetric}) {
      SCOPED_TRACE(absl::StrCat(ShapeToString(shape), " kernel ", AttrToString(w.kernel)));
      // All negative: a padded zero would win any window that touches the border.
      std::vector<float> x = testing::NormalValues(shape, 3);
      for (float& v : x) v = -std::abs(v) - 0.5f;
      ExpectNear(RunOp("MaxPool", shape, x, w.attrs()), ReferencePool(x, shape, w, Reduce::kMax));
    }
  }
}

TEST(PoolOpTest, AvgPoolForwardCountsPaddingAsAsked) {
  for (const Shape& shape : {kPlainShape, kBlockedShape}) {
    for (bool include : {true, false}) {
      SCOPED_TRACE(absl::StrCat(ShapeToString(shape), " count_include_pad ", include));
      Attrs attrs = kOverlapping.attrs();
      attrs.Set("count_include_pad", include);
      std::vector<float> x = testing::NormalValues(shape, 4);
      ExpectNear(RunOp("AvgPool", shape, x, attrs),
                 ReferencePool(x, shape, kOverlapping,
                               include ? Reduce::kAvgIncludePad : Reduce::kAvgExcludePad));
    }
  }
}

TEST(PoolOpTest, GlobalAvgPoolForwardIsThePlaneMean) {
  for (const Shape& shape : {kPlainShape, kBlockedShape}) {
    std::vector<float> x = testing::NormalValues(shape, 5);
    const Window whole{.kernel = {shape[2], shape[3]}};
    ExpectNear(RunOp("GlobalAvgPool", shape, x, {}),
               ReferencePool(x, shape, whole, Reduce::kAvgIncludePad));
  }
}

// Exact ties: the whole gradient of a window goes to its first maximum in row-major order,
// and the total is preserved. (Central differences are ill-defined at ties, so this test is
// exact rather than numeric.)
TEST(PoolOpTest, MaxPoolGradRoutesTiesToTheFirstMaximum) {
  for (const Shape& shape : {kPlainShape, kBlockedShape}) {
    for (const Window& w : {kTiling, kOverlapping}) {
      SCOPED_TRACE(absl::StrCat(ShapeToString(shape), " kernel ", AttrToString(w.kernel)));
      std::mt19937 rng(6);
      std::vector<float> x(NumElements(shape));
      for (float& v : x) v = static_cast<float>(rng() % 3);  // many ties
      const Shape y_shape = {shape[0], shape[1], w.OutputSize(shape, 0), w.OutputSize(shape, 1)};
      std::vector<float> dy(NumElements(y_shape));
      for (float& v : dy) v = static_cast<float>(1 + rng() % 4);  // small ints: exact sums
      std::vector<std::vector<float>> dx =
          RunForward({{.name = "x", .shape = shape, .values = x},
                      {.name = "dy", .shape = y_shape, .values = dy}},
                     [&](Builder& b, const std::vector<Value*>& in) {
                       return std::vector<Value*>{b.Op1("MaxPoolGrad", in, w.attrs())};
                     });
      ASSERT_EQ(dx.size(), 1u);
      std::vector<double> expected(x.size(), 0.0);
      ForEachWindow(shape, w, [&](int64_t out, const std::vector<int64_t>& cells) {
        int64_t first = cells[0];
        for (int64_t cell : cells) first = x[cell] > x[first] ? cell : first;
        expected[first] += dy[out];
      });
      for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(dx[0][i], expected[i]) << "element " << i;
      EXPECT_EQ(std::accumulate(dx[0].begin(), dx[0].end(), 0.0),
                std::accumulate(dy.begin(), dy.end(), 0.0));
    }
  }
}

TEST(PoolOpTest, MaxPoolGradientWithoutTies) {
  for (const Shape& shape : {Shape{2, 3, 6, 5}, Shape{1, 16, 4, 4}}) {
    for (const Window& w : {kOverlapping, kTiling}) {
      SCOPED_TRACE(absl::StrCat(ShapeToString(shape), " kernel ", AttrToString(w.kernel)));
      ExpectOpGradientsMatch("MaxPool",
                             {{.name = "x", .shape = shape, .values = DistinctValues(shape, 8)}},
                             w.attrs());
    }
  }
}

TEST(PoolOpTest, AvgPoolGradient) {
  for (const Shape& shape : {Shape{2, 3, 6, 5}, Shape{1, 16, 4, 4}}) {
    for (bool include : {true, false}) {
      SCOPED_TRACE(absl::StrCat(ShapeToString(shape), " count_include_pad ", include));
      Attrs attrs = kOverlapping.attrs();
      attrs.Set("count_include_pad", include);
      ExpectOpGradientsMatch("AvgPool", {{.name = "x", .shape = shape}}, attrs);
    }
  }
}

TEST(PoolOpTest, GlobalAvgPoolGradient) {
  for (const Shape& shape : {Shape{2, 3, 5, 4}, Shape{2, 16, 3, 3}}) {
    SCOPED_TRACE(ShapeToString(shape));
    ExpectOpGradientsMatch("GlobalAvgPool", {{.name = "x", .shape = shape}}, {});
  }
}

// The Builder's message for `op` on an input of `shape`.
std::string PoolError(const std::string& op, const Shape& shape, const Attrs& attrs) {
  Graph graph;
  Builder b(&graph);
  EXPECT_EQ(b.Op1(op, {b.Input("x", shape)}, attrs), nullptr);
  return std::string(b.status().message());
}

TEST(PoolOpTest, ShapeErrorsNameTheOpShapesAndProblem) {
  std::string message =
      PoolError("MaxPool", {2, 3, 4, 4}, {{"kernel", Shape{7, 7}}, {"padding", Shape{1, 1}}});
  EXPECT_NE(message.find("MaxPool"), std::string::npos) << message;
  EXPECT_NE(message.find("f32[2, 3, 4, 4]"), std::string::npos) << message;
  EXPECT_NE(message.find("kernel [7, 7] is larger than the padded input 6x6"), std::string::npos)
      << message;

  message = PoolError("AvgPool", {2, 3, 4, 4}, {{"kernel", Shape{2, 2}}, {"padding", Shape{2, 0}}});
  EXPECT_NE(message.find("AvgPool"), std::string::npos) << message;
  EXPECT_NE(message.find("padding [2, 0] must be at most half the kernel [2, 2]"),
            std::string::npos)
      << message;

  message = PoolError("GlobalAvgPool", {2, 3, 4}, {});
  EXPECT_NE(message.find("x must be 4-D (N, C, H, W), got [2, 3, 4]"), std::string::npos)
      << message;

  message = PoolError("MaxPool", {2, 3, 4, 4}, {});
  EXPECT_NE(message.find("needs attribute 'kernel'"), std::string::npos) << message;
}

TEST(PoolOpTest, MaxPoolGradChecksDyAgainstThePooling) {
  Graph graph;
  Builder b(&graph);
  EXPECT_EQ(b.Op1("MaxPoolGrad", {b.Input("x", {2, 3, 6, 6}), b.Input("dy", {2, 3, 2, 2})},
                  kTiling.attrs()),
            nullptr);
  std::string message(b.status().message());
  EXPECT_NE(message.find("MaxPoolGrad"), std::string::npos) << message;
  EXPECT_NE(message.find("dy must be [2, 3, 3, 3] for x [2, 3, 6, 6], got f32[2, 3, 2, 2]"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace lockstep
