#include <gtest/gtest.h>

#include "graph/compile.h"
#include "tests/testing/grad_check.h"

namespace lockstep {
namespace {

using testing::ExpectGradientsMatch;
using testing::GradCheckInput;

TEST(AutodiffTest, ContributionsFromSeveralReadersAreSummed) {
  ExpectGradientsMatch(
      {{"w", {3, 4}}, {"unused", {2}}},
      [](Builder& b, const std::vector<Value*>& in) {
        Value* twice = b.Op1("Scale", {in[0]}, {{"scale", 2.0}});
        Value* relu = b.Op1("Relu", {in[0]});
        return std::vector<Value*>{b.Op1("Add", {b.Op1("Add", {twice, in[0]}), relu})};
      },
      {.kink = 0.05});
}

TEST(AutodiffTest, LossMustBeAScalar) {
  auto graph = std::make_unique<Graph>();
  Builder b(graph.get());
  graph->AddOutput("loss", b.Op1("Relu", {b.Parameter("w", {4})}), OutputKind::kResult);
  auto executor = Compile(std::move(graph), {.autodiff = AutodiffOptions{}});
  ASSERT_FALSE(executor.ok());
  EXPECT_NE(std::string(executor.status().message()).find("must be a scalar, it is f32[4]"),
            std::string::npos)
      << executor.status();
}

TEST(AutodiffTest, NonDifferentiableOpOnThePathIsAnError) {
  auto graph = std::make_unique<Graph>();
  Builder b(graph.get());
  Value* w = b.Parameter("w", {1});
  graph->AddOutput("loss", b.Op1("ReluGrad", {w, w}), OutputKind::kResult);
  auto executor = Compile(std::move(graph), {.autodiff = AutodiffOptions{}});
  ASSERT_FALSE(executor.ok());
  EXPECT_NE(std::string(executor.status().message()).find("ReluGrad node"), std::string::npos);
  EXPECT_NE(std::string(executor.status().message()).find("has no gradient rule"),
            std::string::npos)
      << executor.status();
}

// A small conv net: conv -> batch norm -> relu -> max pool -> conv -> relu -> global average
// pool -> dense -> softmax cross-entropy. The compiled backward of the whole loss must match
// central differences of the loss for every parameter and the input. Weights are drawn at
// He-like scales so the loss stays O(1) and float32 rounding stays far below the tolerance;
// the step is small enough that no ReLU or max-pool decision flips for these inputs.
TEST(AutodiffTest, SmallConvNetMatchesFiniteDifferencesOfItsLoss) {
  std::vector<GradCheckInput> inputs = {
      {.name = "x", .shape = {2, 3, 8, 8}},
      {.name = "conv1", .shape = {16, 3, 3, 3}, .stddev = 0.3f},
      {.name = "gamma", .shape = {16}},
      {.name = "beta", .shape = {16}},
      {.name = "mean",
       .shape = {16},
       .differentiable = false,
       .role = InputRole::kState,
       .values = std::vector<float>(16, 0.0f)},
      {.name = "var",
       .shape = {16},
       .differentiable = false,
       .role = InputRole::kState,
       .values = std::vector<float>(16, 1.0f)},
      {.name = "conv2", .shape = {16, 16, 3, 3}, .stddev = 0.1f},
      {.name = "fc", .shape = {16, 5}, .stddev = 0.3f},
      {.name = "bias", .shape = {5}},
      {.name = "labels",
       .shape = {2},
       .dtype = DType::kI32,
       .differentiable = false,
       .values = {1, 4}},
  };
  auto net = [](Builder& b, const std::vector<Value*>& in) {
    Attrs same = {{"padding", Shape{1, 1}}};
    Value* h = b.Op1("Conv2D", {in[0], in[1]}, same);
    h = b.Op("BatchNorm", {h, in[2], in[3], in[4], in[5]})[0];
    h = b.Op1("Relu", {h});
    h = b.Op1("MaxPool", {h}, {{"kernel", Shape{2, 2}}, {"stride", Shape{2, 2}}});
    h = b.Op1("Relu", {b.Op1("Conv2D", {h, in[6]}, same)});
    h = b.Op1("Flatten", {b.Op1("GlobalAvgPool", {h})});
    Value* logits = b.Op1("BiasAdd", {b.Op1("MatMul", {h, in[7]}), in[8]});
    return std::vector<Value*>{b.Op("SoftmaxCrossEntropy", {logits, in[9]})[0]};
  };
  ExpectGradientsMatch(inputs, net, {.step = 3e-4, .tolerance = 1e-2});
}

}  // namespace
}  // namespace lockstep
