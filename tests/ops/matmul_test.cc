#include <gtest/gtest.h>

#include "core/rng.h"
#include "tests/testing/grad_check.h"

namespace lockstep {
namespace {

using testing::GradCheckInput;

struct Transposes {
  bool a, b;
};
constexpr Transposes kAllTransposes[] = {
    {false, false}, {false, true}, {true, false}, {true, true}};

Attrs MatMulAttrs(Transposes t) { return {{"transpose_a", t.a}, {"transpose_b", t.b}}; }

// a and b for an (M, K) x (K, N) product, stored transposed where asked.
std::vector<GradCheckInput> MatMulInputs(Transposes t, int64_t m, int64_t k, int64_t n) {
  Shape a = t.a ? Shape{k, m} : Shape{m, k};
  Shape b = t.b ? Shape{n, k} : Shape{k, n};
  std::vector<float> a_values(m * k), b_values(k * n);
  Philox(3, 0).Normal(a_values.data(), m * k, 0.0f, 1.0f);
  Philox(3, 1).Normal(b_values.data(), k * n, 0.0f, 1.0f);
  return {{.name = "a", .shape = a, .values = a_values},
          {.name = "b", .shape = b, .values = b_values}};
}

TEST(MatMulTest, GradientForEveryTransposeCombination) {
  for (Transposes t : kAllTransposes) {
    SCOPED_TRACE(absl::StrCat("transpose_a=", t.a, " transpose_b=", t.b));
    testing::ExpectOpGradientsMatch("MatMul", MatMulInputs(t, 3, 4, 5), MatMulAttrs(t));
  }
}

TEST(MatMulTest, ForwardMatchesNaiveLoops) {
  const int64_t m = 4, k = 3, n = 5;
  for (Transposes t : kAllTransposes) {
    SCOPED_TRACE(absl::StrCat("transpose_a=", t.a, " transpose_b=", t.b));
    std::vector<GradCheckInput> in = MatMulInputs(t, m, k, n);
    auto outputs = testing::RunForward(in, [&](Builder& b, const std::vector<Value*>& values) {
      return std::vector<Value*>{b.Op1("MatMul", values, MatMulAttrs(t))};
    });
    ASSERT_EQ(outputs.size(), 1u);
    ASSERT_EQ(outputs[0].size(), static_cast<size_t>(m * n));
    const std::vector<float>& a = in[0].values;
    const std::vector<float>& b = in[1].values;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0.0;
        for (int64_t p = 0; p < k; ++p) {
          sum += static_cast<double>(t.a ? a[p * m + i] : a[i * k + p]) *
                 (t.b ? b[j * k + p] : b[p * n + j]);
        }
        EXPECT_NEAR(outputs[0][i * n + j], sum, 1e-5) << i << ", " << j;
      }
    }
  }
}

TEST(MatMulTest, ShapeErrorsNameTheOpAndShapes) {
  Graph graph;
  Builder b(&graph);
  Value* a = b.Input("a", {2, 3});
  Value* w = b.Input("w", {2, 5});
  EXPECT_EQ(b.Op1("MatMul", {a, w}), nullptr);
  std::string message(b.status().message());
  for (const char* part : {"MatMul", "f32[2, 3]", "f32[2, 5]", "a gives K = 3", "b gives K = 2"}) {
    EXPECT_NE(message.find(part), std::string::npos) << message;
  }
}

TEST(MatMulTest, OnlyTwoDimensional) {
  Graph graph;
  Builder b(&graph);
  EXPECT_EQ(b.Op1("MatMul", {b.Input("a", {2, 3, 4}), b.Input("b", {4, 2})}), nullptr);
  std::string message(b.status().message());
  EXPECT_NE(message.find("must be 2-D"), std::string::npos) << message;
}

}  // namespace
}  // namespace lockstep
