#include <gtest/gtest.h>

#include <cmath>

#include "core/rng.h"
#include "graph/builder.h"
#include "graph/compile.h"
#include "ops/cpu/cpu_layouts.h"
#include "tests/testing/grad_check.h"

namespace lockstep {
namespace {

using testing::ExpectGradientsMatch;
using testing::GradCheckInput;

constexpr double kEpsilon = 1e-5;

std::vector<float> Normal(int64_t n, uint64_t stream, float mean = 0.0f, float stddev = 1.0f) {
  std::vector<float> values(n);
  Philox(7, stream).Normal(values.data(), n, mean, stddev);
  return values;
}

// x, gamma, beta and the running statistics (state, not differentiated), with explicit values
// (variances positive) so tests can compute a reference.
std::vector<GradCheckInput> BatchNormInputs(const Shape& x_shape) {
  const int64_t c = x_shape[1];
  return {
      {.name = "x", .shape = x_shape, .values = Normal(NumElements(x_shape), 1, 0.5f, 2.0f)},
      {.name = "gamma", .shape = {c}, .values = Normal(c, 2, 1.0f, 0.5f)},
      {.name = "beta", .shape = {c}, .values = Normal(c, 3)},
      {.name = "mean",
       .shape = {c},
       .differentiable = false,
       .role = InputRole::kState,
       .values = Normal(c, 4)},
      {.name = "var",
       .shape = {c},
       .differentiable = false,
       .role = InputRole::kState,
       .values = Normal(c, 5, 2.0f, 0.3f)},
  };
}

// Only y: the other outputs are statistics and side effects that no gradient flows through.
std::vector<Value*> BatchNormY(Builder& b, const std::vector<Value*>& in) {
  std::vector<Value*> out = b.Op("BatchNorm", in);
  return {out.empty() ? nullptr : out[0]};
}

// Per-channel mean and biased variance of x (N, C, inner...), in double.
struct Stats {
  std::vector<double> mean, var;
};
Stats BatchStats(const std::vector<float>& x, const Shape& shape) {
  const int64_t n = shape[0], c = shape[1], inner = NumElements(shape) / (n * c);
  Stats stats{std::vector<double>(c, 0.0), std::vector<double>(c, 0.0)};
  for (int64_t ch = 0; ch < c; ++ch) {
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t i = 0; i < inner; ++i) stats.mean[ch] += x[(b * c + ch) * inner + i];
    }
    stats.mean[ch] /= n * inner;
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t i = 0; i < inner; ++i) {
        stats.var[ch] += std::pow(x[(b * c + ch) * inner + i] - stats.mean[ch], 2);
      }
    }
    stats.var[ch] /= n * inner;
  }
  return stats;
}

// gamma * (x - mean) / sqrt(var + eps) + beta, per channel.
std::vector<double> Normalize(const std::vector<GradCheckInput>& in, const Shape& shape,
                              const Stats& stats) {
  const int64_t c = shape[1], inner = NumElements(shape) / (shape[0] * c);
  std::vector<double> y(NumElements(shape));
  for (size_t i = 0; i < y.size(); ++i) {
    const int64_t ch = (i / inner) % c;
    y[i] = in[1].values[ch] * (in[0].values[i] - stats.mean[ch]) /
               std::sqrt(stats.var[ch] + kEpsilon) +
           in[2].values[ch];
  }
  return y;
}

void ExpectNear(const std::vector<float>& actual, const std::vector<double>& expected,
                double tolerance, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], tolerance) << what << "[" << i << "]";
  }
}

TEST(BatchNormTest, Gradient4DThreeChannels) {
  ExpectGradientsMatch(BatchNormInputs({2, 3, 3, 3}), BatchNormY);
}

// C = 16 runs BatchNorm and BatchNormGrad in the blocked layout (nChw8c or nChw16c).
TEST(BatchNormTest, Gradient4DSixteenChannelsBlocked) {
  ExpectGradientsMatch(BatchNormInputs({2, 16, 2, 2}), BatchNormY);
}

TEST(BatchNormTest, Gradient2D) { ExpectGradientsMatch(BatchNormInputs({6, 4}), BatchNormY); }

// Blocked BatchNorm -> Relu -> Flatten -> MatMul -> SoftmaxCrossEntropy: the gradient of the
// whole loss, through the reorder back to plain before Flatten.
TEST(BatchNormTest, GradientOfADenseClassifierLoss) {
  std::vector<GradCheckInput> in = BatchNormInputs({2, 16, 2, 2});
  in.push_back({.name = "w", .shape = {64, 3}, .values = Normal(64 * 3, 6, 0.0f, 0.3f)});
  in.push_back({.name = "labels",
                .shape = {2},
                .dtype = DType::kI32,
                .differentiable = false,
                .values = {2, 0}});
  auto net = [](Builder& b, const std::vector<Value*>& v) {
    Value* h = BatchNormY(b, {v[0], v[1], v[2], v[3], v[4]})[0];
    Value* logits = b.Op1("MatMul", {b.Op1("Flatten", {b.Op1("Relu", {h})}), v[5]});
    return std::vector<Value*>{b.Op("SoftmaxCrossEntropy", {logits, v[6]})[0]};
  };
  ExpectGradientsMatch(in, net, {.step = 1e-3, .tolerance = 2e-2});
}

// y, the saved batch statistics (biased variance) and the running averages
// (0.9 * running + 0.1 * batch, with the unbiased variance).
TEST(BatchNormTest, TrainingForwardMatchesReference) {
  for (const Shape& shape : {Shape{3, 2, 2, 2}, Shape{2, 16, 3, 1}, Shape{5, 3}}) {
    SCOPED_TRACE(ShapeToString(shape));
    std::vector<GradCheckInput> in = BatchNormInputs(shape);
    auto outputs = testing::RunForward(in, [](Builder& b, const std::vector<Value*>& values) {
      return b.Op("BatchNorm", values);
    });
    ASSERT_EQ(outputs.size(), 5u);
    Stats stats = BatchStats(in[0].values, shape);
    const double m = NumElements(shape) / shape[1];
    std::vector<double> running_mean, running_var;
    for (int64_t c = 0; c < shape[1]; ++c) {
      running_mean.push_back(0.9 * in[3].values[c] + 0.1 * stats.mean[c]);
      running_var.push_back(0.9 * in[4].values[c] + 0.1 * stats.var[c] * m / (m - 1));
    }
    ExpectNear(outputs[0], Normalize(in, shape, stats), 1e-4, "y");
    ExpectNear(outputs[1], stats.mean, 1e-5, "saved_mean");
    ExpectNear(outputs[2], stats.var, 1e-4, "saved_var");
    ExpectNear(outputs[3], running_mean, 1e-5, "running_mean");
    ExpectNear(outputs[4], running_var, 1e-4, "running_var");
  }
}

// The running averages are written in place into the state, so they accumulate over steps.
TEST(BatchNormTest, RunningStatisticsAccumulateAcrossSteps) {
  const Shape shape = {4, 2};
  auto graph = std::make_unique<Graph>();
  Builder b(graph.get());
  std::vector<Value*> in = {b.Input("x", shape), b.Parameter("gamma", {2}),
                            b.Parameter("beta", {2}), b.State("mean", {2}), b.State("var", {2})};
  std::vector<Value*> out = b.Op("BatchNorm", in, {{"momentum", 0.5}});
  ASSERT_TRUE(b.status().ok()) << b.status();
  graph->AddOutput("y", out[0], OutputKind::kResult);
  graph->AddOutput("mean'", out[3], OutputKind::kUpdate);
  graph->AddOutput("var'", out[4], OutputKind::kUpdate);
  auto executor = Compile(std::move(graph), {});
  ASSERT_TRUE(executor.ok()) << executor.status();
  // Channel 0 holds 1, 2, 3, 4 (mean 2.5, unbiased variance 5/3); channel 1 holds 0.
  const std::vector<float> x = {1, 0, 2, 0, 3, 0, 4, 0};
  std::copy(x.begin(), x.end(), (*executor)->Input("x")->data<float>());
  for (int step = 0; step < 2; ++step) ASSERT_TRUE((*executor)->Run().ok());
  const float* mean = (*executor)->Input("mean")->data<float>();
  const float* var = (*executor)->Input("var")->data<float>();
  EXPECT_NEAR(mean[0], 0.75 * 2.5, 1e-6);  // 0.5 * (0.5 * 0 + 0.5 * 2.5) + 0.5 * 2.5
  EXPECT_NEAR(var[0], 0.75 * 5.0 / 3.0, 1e-6);
  EXPECT_EQ(mean[1], 0.0f);
  EXPECT_EQ(var[1], 0.0f);
}

TEST(BatchNormTest, InferenceMatchesReference) {
  for (const Shape& shape : {Shape{2, 3, 2, 3}, Shape{2, 16, 2, 1}, Shape{4, 5}}) {
    SCOPED_TRACE(ShapeToString(shape));
    std::vector<GradCheckInput> in = BatchNormInputs(shape);
    auto outputs = testing::RunForward(in, [](Builder& b, const std::vector<Value*>& values) {
      return std::vector<Value*>{b.Op1("BatchNormInference", values)};
    });
    ASSERT_EQ(outputs.size(), 1u);
    Stats running{{in[3].values.begin(), in[3].values.end()},
                  {in[4].values.begin(), in[4].values.end()}};
    ExpectNear(outputs[0], Normalize(in, shape, running), 1e-4, "y");
  }
}

// BatchNorm -> Relu -> BatchNorm, forward and backward, with C = 16: the activations stay
// blocked, so the only reorders are at the graph's plain boundary (x, dy in; y, dx out).
TEST(BatchNormTest, ConsecutiveBatchNormsStayBlocked) {
  auto graph = std::make_unique<Graph>();
  Builder b(graph.get());
  Value* h = b.Input("x", {2, 16, 4, 4});
  for (int i = 0; i < 2; ++i) {
    auto vector = [&](const char* name) { return b.Parameter(absl::StrCat(name, i), {16}); };
    h = b.Op("BatchNorm",
             {h, vector("gamma"), vector("beta"), b.State(absl::StrCat("mean", i), {16}),
              b.State(absl::StrCat("var", i), {16})})[0];
    if (i == 0) h = b.Op1("Relu", {h});
  }
  b.Input("dy", {2, 16, 4, 4});  // the seed of y's gradient
  ASSERT_TRUE(b.status().ok()) << b.status();
  graph->AddOutput("y", h, OutputKind::kResult);
  CompileOptions options;
  options.autodiff = AutodiffOptions{.seeds = {{"y", "dy"}}, .wrt = {"x", "gamma0", "gamma1"}};
  auto executor = Compile(std::move(graph), options);
  ASSERT_TRUE(executor.ok()) << executor.status();
  int reorders = 0;
  for (const auto& node : (*executor)->graph().nodes()) {
    const std::string& op = node->op->name();
    reorders += op == "Reorder";
    if (op.starts_with("BatchNorm")) {
      EXPECT_EQ(node->inputs[0]->layout, NativeBlockedLayout()) << node->Describe();
      EXPECT_EQ(node->output(0)->layout, NativeBlockedLayout()) << node->Describe();
      EXPECT_EQ(node->inputs[1]->layout, Layout::kPlain) << node->Describe();
    }
  }
  EXPECT_EQ(reorders, 4);
}

TEST(BatchNormTest, ShapeErrorsNameTheOpAndShapes) {
  Graph graph;
  Builder b(&graph);
  Value* x = b.Input("x", {2, 3, 4, 4});
  Value* c3 = b.Input("c3", {3});
  Value* c4 = b.Input("c4", {4});
  EXPECT_TRUE(b.Op("BatchNorm", {x, c3, c4, c3, c3}).empty());
  std::string message(b.status().message());
  for (const char* part : {"BatchNorm", "beta must be f32[3]", "f32[2, 3, 4, 4]", "got f32[4]"}) {
    EXPECT_NE(message.find(part), std::string::npos) << message;
  }
}

TEST(BatchNormTest, TrainingNeedsMoreThanOneValuePerChannel) {
  Graph graph;
  Builder b(&graph);
  Value* c3 = b.Input("c3", {3});
  EXPECT_TRUE(b.Op("BatchNorm", {b.Input("x", {1, 3}), c3, c3, c3, c3}).empty());
  std::string message(b.status().message());
  EXPECT_NE(message.find("more than one value per channel"), std::string::npos) << message;
}

}  // namespace
}  // namespace lockstep
