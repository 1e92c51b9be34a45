#include "train/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>

#include "graph/builder.h"
#include "graph/compile.h"
#include "train/passes/accumulate_gradients.h"
#include "train/passes/apply_optimizer.h"

namespace lockstep::train {
namespace {

TEST(LrScheduleTest, ConstantAndStep) {
  LrSchedule constant = 0.1;
  EXPECT_DOUBLE_EQ(constant(0), 0.1);
  EXPECT_DOUBLE_EQ(constant(1000), 0.1);
  LrSchedule step = StepLr(0.1, 10, 0.5);
  EXPECT_DOUBLE_EQ(step(9), 0.1);
  EXPECT_DOUBLE_EQ(step(10), 0.05);
  EXPECT_DOUBLE_EQ(step(25), 0.025);
}

TEST(LrScheduleTest, CosineFallsToTheMinimumAndStays) {
  LrSchedule cosine = CosineLr(0.1, 100, 0.001);
  EXPECT_DOUBLE_EQ(cosine(0), 0.1);
  EXPECT_NEAR(cosine(50), 0.0505, 1e-12);
  EXPECT_NEAR(cosine(100), 0.001, 1e-12);
  EXPECT_NEAR(cosine(500), 0.001, 1e-12);
  EXPECT_GT(cosine(30), cosine(31));
}

TEST(LrScheduleTest, WarmupRisesLinearlyThenHandsOver) {
  LrSchedule warmup = WarmupLr(4, StepLr(0.4, 10, 0.1));
  EXPECT_DOUBLE_EQ(warmup(0), 0.1);
  EXPECT_DOUBLE_EQ(warmup(3), 0.4);
  EXPECT_DOUBLE_EQ(warmup(4), 0.4);
  EXPECT_NEAR(warmup(14), 0.04, 1e-12);
}

// loss = SoftmaxCrossEntropy(x w) with a (3, 2) parameter w.
std::unique_ptr<Graph> LinearLoss() {
  auto graph = std::make_unique<Graph>();
  Builder b(graph.get());
  Value* logits = b.Op1("MatMul", {b.Input("x", {4, 3}), b.Parameter("w", {3, 2})});
  graph->AddOutput("loss",
                   b.Op("SoftmaxCrossEntropy", {logits, b.Input("labels", {4}, DType::kI32)})[0],
                   OutputKind::kResult);
  EXPECT_TRUE(b.status().ok()) << b.status();
  return graph;
}

// LinearLoss compiled with the optimizer pass.
std::unique_ptr<Executor> CompileLinear(const ApplyOptimizerOptions& options, double loss_scale) {
  CompileOptions compile{.autodiff = AutodiffOptions{.loss = "loss", .loss_scale = loss_scale}};
  compile.config.Set(options);
  compile.after_autodiff.push_back(CreateApplyOptimizerPass);
  auto executor = Compile(LinearLoss(), compile);
  EXPECT_TRUE(executor.ok()) << executor.status();
  return executor.ok() ? std::move(*executor) : nullptr;
}

// Two steps against the update written out by hand from the gradient the graph computed.
TEST(ApplyOptimizerTest, UpdatesParametersAndMomentsInPlace) {
  const ApplyOptimizerOptions options{.momentum = 0.9, .weight_decay = 0.01, .nesterov = true};
  const double loss_scale = 8.0;
  std::unique_ptr<Executor> executor = CompileLinear(options, loss_scale);
  ASSERT_NE(executor, nullptr);
  const Graph& graph = executor->graph();
  ASSERT_NE(graph.FindOutput("update/w"), nullptr);
  EXPECT_EQ(graph.FindOutput("update/w")->kind, OutputKind::kUpdate);
  ASSERT_NE(graph.FindOutput("update/moments.w"), nullptr);
  ASSERT_NE(graph.FindInput("moments.w"), nullptr);
  EXPECT_EQ(graph.FindInput("moments.w")->role(), InputRole::kState);

  float* w = executor->Input("w")->data<float>();
  const float* moment = executor->Input("moments.w")->data<float>();
  const float* grad = executor->Output("grad/w")->data<float>();
  float* x = executor->Input("x")->data<float>();
  for (int i = 0; i < 12; ++i) x[i] = 0.1f * static_cast<float>(i % 5) - 0.2f;
  for (int i = 0; i < 6; ++i) w[i] = 0.3f * static_cast<float>(i) - 0.7f;
  int32_t* labels = executor->Input("labels")->data<int32_t>();
  for (int i = 0; i < 4; ++i) labels[i] = i % 2;
  std::vector<double> expected_w(w, w + 6), expected_moment(6, 0.0);
  for (double lr : {0.5, 0.25}) {
    *executor->Input("lr")->data<float>() = static_cast<float>(lr);
    ASSERT_TRUE(executor->Run().ok());
    for (int i = 0; i < 6; ++i) {
      const double g = grad[i] / loss_scale + options.weight_decay * expected_w[i];
      expected_moment[i] = options.momentum * expected_moment[i] + g;
      expected_w[i] -= lr * (g + options.momentum * expected_moment[i]);
      EXPECT_NEAR(moment[i], expected_moment[i], 1e-6) << "lr " << lr << ", moment " << i;
      EXPECT_NEAR(w[i], expected_w[i], 1e-6) << "lr " << lr << ", w " << i;
    }
  }
}

// The gradient output stays linked to its parameter through accumulation and the optimizer,
// whose update of the parameter reads that gradient.
TEST(ApplyOptimizerTest, GradientLinkSurvivesAccumulationAndTheUpdate) {
  CompileOptions compile{.autodiff = AutodiffOptions{}};
  compile.config.Set(MicroBatch::kLast);
  compile.config.Set(ApplyOptimizerOptions{.accumulation_steps = 2});
  compile.after_autodiff.push_back(CreateAccumulateGradientsPass);
  compile.after_autodiff.push_back(CreateApplyOptimizerPass);
  auto executor = Compile(LinearLoss(), compile);
  ASSERT_TRUE(executor.ok()) << executor.status();
  const Graph& graph = (*executor)->graph();
  const Node* w = graph.FindInput("w");
  const GraphOutput* gradient = graph.FindGradientOutput(w);
  ASSERT_NE(gradient, nullptr);
  EXPECT_EQ(gradient->name, "grad/w");
  EXPECT_EQ(gradient->value->producer->op->name(), "Add");  // grad + accum.w
  int updates = 0;
  for (const auto& node : graph.nodes()) {
    if (node->op->name() != "Momentum") continue;
    ++updates;
    EXPECT_EQ(node->inputs[0], w->output());
    EXPECT_EQ(node->inputs[1], gradient->value);
  }
  EXPECT_EQ(updates, 1);
}

TEST(ApplyOptimizerTest, NeedsGradients) {
  Graph graph;
  Builder b(&graph);
  graph.AddOutput("y", b.Op1("Relu", {b.Parameter("w", {3})}), OutputKind::kResult);
  PassContext ctx;
  ctx.config.Set(ApplyOptimizerOptions{});
  absl::Status status = CreateApplyOptimizerPass()->Run(graph, ctx);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("Autodiff"), std::string::npos) << status;
}

TEST(ApplyOptimizerTest, RejectsALearningRateInputOfTheWrongType) {
  auto graph = std::make_unique<Graph>();
  Builder b(graph.get());
  Value* lr = b.Input("lr", {2});
  Value* w = b.Parameter("w", {2});
  graph->AddOutput("loss",
                   b.Op("SoftmaxCrossEntropy",
                        {b.Op1("Reshape", {b.Op1("Add", {w, lr})}, {{"shape", Shape{1, 2}}}),
                         b.Input("labels", {1}, DType::kI32)})[0],
                   OutputKind::kResult);
  ASSERT_TRUE(b.status().ok()) << b.status();
  CompileOptions compile{.autodiff = AutodiffOptions{}};
  compile.config.Set(ApplyOptimizerOptions{});
  compile.after_autodiff.push_back(CreateApplyOptimizerPass);
  auto executor = Compile(std::move(graph), compile);
  ASSERT_FALSE(executor.ok());
  EXPECT_NE(executor.status().message().find("learning-rate input 'lr' must be a f32[]"),
            std::string::npos)
      << executor.status();
}

}  // namespace
}  // namespace lockstep::train
