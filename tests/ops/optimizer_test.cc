#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <utility>

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

// Momentum with the dynamic inputs (loss_scale, finite): the update of a fixed scale of
// attribute * input when finite, and nothing at all when not.
TEST(MomentumTest, DynamicScaleDividesOrSkips) {
  auto graph = std::make_unique<Graph>();
  Builder b(graph.get());
  std::vector<Value*> out =
      b.Op("Momentum",
           {b.Parameter("param", {kSize}), b.Input("grad", {kSize}), b.State("moment", {kSize}),
            b.Input("lr", {}), b.Input("loss_scale", {}), b.Input("finite", {})},
           {{"loss_scale", 4.0}});
  ASSERT_TRUE(b.status().ok()) << b.status();
  graph->AddOutput("param'", out[0], OutputKind::kUpdate);
  graph->AddOutput("moment'", out[1], OutputKind::kUpdate);
  absl::StatusOr<std::unique_ptr<Executor>> executor = Compile(std::move(graph), {});
  ASSERT_TRUE(executor.ok()) << executor.status();
  Executor& ex = **executor;
  auto scalar = [&](const char* name) { return ex.Input(name)->data<float>(); };
  float* param = scalar("param");
  const float* moment = scalar("moment");
  float* grad = scalar("grad");
  for (int64_t i = 0; i < kSize; ++i) {
    param[i] = static_cast<float>(i);
    grad[i] = 4096.0f * static_cast<float>(i + 1);  // (i + 1) scaled by 4 * 1024
  }
  *scalar("lr") = 0.5f;
  *scalar("loss_scale") = 1024.0f;
  *scalar("finite") = 0.0f;
  ASSERT_TRUE(ex.Run().ok());
  for (int64_t i = 0; i < kSize; ++i) {
    EXPECT_EQ(param[i], static_cast<float>(i)) << "skipped step changed param[" << i << "]";
    EXPECT_EQ(moment[i], 0.0f) << "skipped step changed moment[" << i << "]";
  }
  *scalar("finite") = 1.0f;
  ASSERT_TRUE(ex.Run().ok());
  for (int64_t i = 0; i < kSize; ++i) {
    EXPECT_EQ(moment[i], static_cast<float>(i + 1)) << i;
    EXPECT_EQ(param[i], static_cast<float>(i) - 0.5f * static_cast<float>(i + 1)) << i;
  }
}

TEST(AllFiniteTest, OneNonFiniteElementOfAnyInputClearsTheFlag) {
  auto graph = std::make_unique<Graph>();
  Builder b(graph.get());
  Value* finite = b.Op1("AllFinite", {b.Input("a", {3}), b.Input("b", {1000})});
  ASSERT_TRUE(b.status().ok()) << b.status();
  graph->AddOutput("finite", finite, OutputKind::kResult);
  absl::StatusOr<std::unique_ptr<Executor>> executor = Compile(std::move(graph), {});
  ASSERT_TRUE(executor.ok()) << executor.status();
  Executor& ex = **executor;
  float* second = ex.Input("b")->data<float>();
  std::fill(ex.Input("a")->data<float>(), ex.Input("a")->data<float>() + 3, 1e38f);
  std::fill(second, second + 1000, -3.0f);
  auto run = [&] {
    EXPECT_TRUE(ex.Run().ok());
    return *ex.Output("finite")->data<float>();
  };
  EXPECT_EQ(run(), 1.0f);
  for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN()}) {
    second[777] = bad;
    EXPECT_EQ(run(), 0.0f) << bad;
  }
  second[777] = 0.0f;
  EXPECT_EQ(run(), 1.0f);
}

// loss_scale, good_steps and finite fed each step, the update read back.
class UpdateLossScaleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto graph = std::make_unique<Graph>();
    Builder b(graph.get());
    std::vector<Value*> out =
        b.Op("UpdateLossScale",
             {b.State("scale", {}), b.State("good", {}, DType::kI32), b.Input("finite", {})},
             {{"factor", 2.0}, {"window", int64_t{3}}});
    ASSERT_TRUE(b.status().ok()) << b.status();
    graph->AddOutput("scale'", out[0], OutputKind::kUpdate);
    graph->AddOutput("good'", out[1], OutputKind::kUpdate);
    absl::StatusOr<std::unique_ptr<Executor>> executor = Compile(std::move(graph), {});
    ASSERT_TRUE(executor.ok()) << executor.status();
    executor_ = std::move(*executor);
  }
  // One step from `scale`; returns (scale', good_steps').
  std::pair<float, int32_t> Step(bool finite) {
    *executor_->Input("finite")->data<float>() = finite ? 1.0f : 0.0f;
    EXPECT_TRUE(executor_->Run().ok());
    return {*executor_->Input("scale")->data<float>(), *executor_->Input("good")->data<int32_t>()};
  }
  void Set(float scale, int32_t good) {
    *executor_->Input("scale")->data<float>() = scale;
    *executor_->Input("good")->data<int32_t>() = good;
  }
  std::unique_ptr<Executor> executor_;
};

TEST_F(UpdateLossScaleTest, GrowsAfterAWindowHalvesOnOverflowNotBelowOne) {
  Set(1024.0f, 0);
  EXPECT_EQ(Step(true), std::make_pair(1024.0f, 1));
  EXPECT_EQ(Step(true), std::make_pair(1024.0f, 2));
  EXPECT_EQ(Step(true), std::make_pair(2048.0f, 0));
  EXPECT_EQ(Step(true), std::make_pair(2048.0f, 1));
  EXPECT_EQ(Step(false), std::make_pair(1024.0f, 0));
  Set(1.5f, 2);
  EXPECT_EQ(Step(false), std::make_pair(1.0f, 0));
  EXPECT_EQ(Step(false), std::make_pair(1.0f, 0));
  // At the top of float, a window of finite steps leaves the scale where it is.
  Set(std::numeric_limits<float>::max(), 2);
  EXPECT_EQ(Step(true), std::make_pair(std::numeric_limits<float>::max(), 0));
}

TEST(UpdateLossScaleOpTest, TypesAndAttributesAreChecked) {
  Graph graph;
  Builder b(&graph);
  EXPECT_TRUE(b.Op("UpdateLossScale", {b.State("scale", {}), b.State("good", {}),
                                       b.Input("finite", {})})
                  .empty());
  EXPECT_NE(b.status().message().find("good_steps i32[]"), std::string::npos) << b.status();
  Graph other;
  Builder c(&other);
  EXPECT_TRUE(c.Op("UpdateLossScale",
                   {c.State("scale", {}), c.State("good", {}, DType::kI32), c.Input("finite", {})},
                   {{"factor", 1.0}})
                  .empty());
  EXPECT_NE(c.status().message().find("factor must exceed 1"), std::string::npos) << c.status();
}

}  // namespace
}  // namespace lockstep
