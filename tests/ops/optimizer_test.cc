#include <gtest/gtest.h>

#include "graph/builder.h"
#include "graph/compile.h"

namespace lockstep {
namespace {

constexpr int64_t kSize = 5;

struct MomentumConfig {
  double momentum = 0.9;
  double weight_decay = 0.0;
  bool nesterov = false;
  double loss_scale = 1.0;
};

// param (parameter), grad (fed), moment (state) and lr (fed) -> Momentum, updating in place.
std::unique_ptr<Executor> CompileMomentum(const MomentumConfig& config) {
  auto graph = std::make_unique<Graph>();
  Builder b(graph.get());
  std::vector<Value*> out = b.Op("Momentum",
                                 {b.Parameter("param", {kSize}), b.Input("grad", {kSize}),
                                  b.State("moment", {kSize}), b.Input("lr", {})},
                                 {{"momentum", config.momentum},
                                  {"weight_decay", config.weight_decay},
                                  {"nesterov", config.nesterov},
                                  {"loss_scale", config.loss_scale}});
  EXPECT_TRUE(b.status().ok()) << b.status();
  if (!b.status().ok()) return nullptr;
  graph->AddOutput("param'", out[0], OutputKind::kUpdate);
  graph->AddOutput("moment'", out[1], OutputKind::kUpdate);
  auto executor = Compile(std::move(graph), {});
  EXPECT_TRUE(executor.ok()) << executor.status();
  return executor.ok() ? std::move(*executor) : nullptr;
}

// Three steps with a different gradient and learning rate each, against the update written
// out by hand in double.
void ExpectThreeStepsMatchHandComputation(const MomentumConfig& config) {
  std::unique_ptr<Executor> executor = CompileMomentum(config);
  ASSERT_NE(executor, nullptr);
  std::vector<double> param = {1.0, -2.0, 0.5, 3.0, -0.25};
  std::vector<double> moment(kSize, 0.0);
  float* param_view = executor->Input("param")->data<float>();
  std::copy(param.begin(), param.end(), param_view);
  for (int step = 0; step < 3; ++step) {
    const double lr = 0.1 / (step + 1);
    *executor->Input("lr")->data<float>() = static_cast<float>(lr);
    float* grad = executor->Input("grad")->data<float>();
    for (int64_t i = 0; i < kSize; ++i) {
      grad[i] = static_cast<float>(config.loss_scale * (0.5 * i - 1.0 + step));
      double g = grad[i] / config.loss_scale + config.weight_decay * param[i];
      moment[i] = config.momentum * moment[i] + g;
      param[i] -= lr * (config.nesterov ? g + config.momentum * moment[i] : moment[i]);
    }
    ASSERT_TRUE(executor->Run().ok());
    const float* moment_view = executor->Input("moment")->data<float>();
    for (int64_t i = 0; i < kSize; ++i) {
      EXPECT_NEAR(param_view[i], param[i], 1e-5) << "step " << step << ", param[" << i << "]";
      EXPECT_NEAR(moment_view[i], moment[i], 1e-5) << "step " << step << ", moment[" << i << "]";
    }
  }
}

TEST(MomentumTest, PlainMomentum) { ExpectThreeStepsMatchHandComputation({}); }

TEST(MomentumTest, NesterovWithWeightDecayAndLossScale) {
  ExpectThreeStepsMatchHandComputation(
      {.momentum = 0.8, .weight_decay = 0.01, .nesterov = true, .loss_scale = 1024.0});
}

TEST(MomentumTest, WeightDecayAndLossScaleWithoutNesterov) {
  ExpectThreeStepsMatchHandComputation({.weight_decay = 0.1, .loss_scale = 8.0});
}

TEST(MomentumTest, ShapeErrorsNameTheOpAndShapes) {
  Graph graph;
  Builder b(&graph);
  EXPECT_TRUE(b.Op("Momentum", {b.Parameter("param", {4}), b.Input("grad", {3}),
                                b.State("moment", {4}), b.Input("lr", {})})
                  .empty());
  std::string message(b.status().message());
  for (const char* part : {"Momentum", "grad must be f32[4]", "got f32[3]"}) {
    EXPECT_NE(message.find(part), std::string::npos) << message;
  }
}

TEST(MomentumTest, LearningRateMustBeAScalar) {
  Graph graph;
  Builder b(&graph);
  EXPECT_TRUE(b.Op("Momentum", {b.Parameter("param", {4}), b.Input("grad", {4}),
                                b.State("moment", {4}), b.Input("lr", {1})})
                  .empty());
  std::string message(b.status().message());
  EXPECT_NE(message.find("lr must be f32[]"), std::string::npos) << message;
}

}  // namespace
}  // namespace lockstep
