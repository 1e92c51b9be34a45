#include <gtest/gtest.h>

#include "graph/builder.h"
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

// Every parameter's gradient output stays linked to that parameter node through the compile
// pipeline, and the memory plan puts it at the parameter's offset of the gradient buffer.
TEST(AutodiffTest, GradientOutputsLinkToTheirParameters) {
  auto graph = std::make_unique<Graph>();
  Builder b(graph.get());
  Value* h = b.Op1("MatMul", {b.Input("x", {2, 4}), b.Parameter("w", {4, 3})});
  Value* logits = b.Op1("BiasAdd", {b.Op1("Relu", {h}), b.Parameter("b", {3})});
  graph->AddOutput("loss", b.Op("SoftmaxCrossEntropy", {logits, b.Input("l", {2}, DType::kI32)})[0],
                   OutputKind::kResult);
  ASSERT_TRUE(b.status().ok()) << b.status();
  auto executor = Compile(std::move(graph), {.autodiff = AutodiffOptions{.wrt = {"w", "b", "x"}}});
  ASSERT_TRUE(executor.ok()) << executor.status();
  const Graph& compiled = (*executor)->graph();
  for (const Node* parameter : compiled.InputNodes(InputRole::kParameter)) {
    const GraphOutput* gradient = compiled.FindGradientOutput(parameter);
    ASSERT_NE(gradient, nullptr) << parameter->name;
    EXPECT_EQ(gradient->name, GradientName(parameter->name));
    const Allocation storage = InPlaceRoot(gradient->value)->alloc;
    EXPECT_EQ(storage.region, Region::kGradients) << parameter->name;
    EXPECT_EQ(storage.offset, parameter->output()->alloc.offset) << parameter->name;
  }
  // A data input's gradient is a plain result, linked to nothing.
  const GraphOutput* x = compiled.FindOutput("grad/x");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->kind, OutputKind::kResult);
  EXPECT_EQ(x->parameter, nullptr);
}

TEST(AutodiffTest, VerifierRejectsGradientOutputsWithoutTheirParameter) {
  Graph graph;
  Builder b(&graph);
  Value* w = b.Parameter("w", {3});
  Value* v = b.Parameter("v", {2});
  Value* x = b.Input("x", {3});
  graph.AddOutput(GradientName("w"), b.Op1("Relu", {w}), OutputKind::kGradient);
  ASSERT_TRUE(b.status().ok()) << b.status();
  auto expect_error = [&graph](const std::string& message) {
    absl::Status status = VerifyGraph(graph);
    EXPECT_NE(status.message().find(message), std::string::npos) << status;
  };
  expect_error("gradient output grad/w is not linked to a parameter input of the graph");
  graph.outputs()[0].parameter = x->producer;
  expect_error("gradient output grad/w is not linked to a parameter input of the graph");
  graph.outputs()[0].parameter = v->producer;
  expect_error("gradient output grad/w is f32[3], its Input node 'v' (#1) is f32[2]");
  graph.outputs()[0].parameter = w->producer;
  EXPECT_TRUE(VerifyGraph(graph).ok()) << VerifyGraph(graph);
  graph.AddGradientOutput(w->producer, b.Op1("Relu", {w}));
  expect_error("gradient output grad/w is a second gradient of Input node 'w' (#0)");
}

}  // namespace
}  // namespace lockstep
