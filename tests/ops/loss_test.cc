#include <gtest/gtest.h>

#include <cmath>

#include "core/rng.h"
#include "graph/builder.h"
#include "graph/compile.h"
#include "tests/testing/grad_check.h"

namespace lockstep {
namespace {

using testing::GradCheckInput;

constexpr int64_t kRows = 4, kClasses = 5;

// logits (N, C) with explicit values and i32 labels (N), not differentiable.
std::vector<GradCheckInput> LossInputs(std::vector<float> labels) {
  std::vector<float> logits(kRows * kClasses);
  Philox(5, 0).Normal(logits.data(), kRows * kClasses, 0.0f, 2.0f);
  return {{.name = "logits", .shape = {kRows, kClasses}, .values = logits},
          {.name = "labels",
           .shape = {kRows},
           .dtype = DType::kI32,
           .differentiable = false,
           .values = std::move(labels)}};
}

// Builds `build` over logits (N, C) and labels (N), compiles it forward and feeds the values.
std::unique_ptr<Executor> CompileWithValues(
    const std::vector<float>& logits, const std::vector<int32_t>& labels,
    const std::function<std::vector<Value*>(Builder&, Value*, Value*)>& build) {
  const int64_t n = static_cast<int64_t>(labels.size());
  auto graph = std::make_unique<Graph>();
  Builder b(graph.get());
  Value* x = b.Input("logits", {n, static_cast<int64_t>(logits.size()) / n});
  Value* y = b.Input("labels", {n}, DType::kI32);
  std::vector<Value*> outputs = build(b, x, y);
  EXPECT_TRUE(b.status().ok()) << b.status();
  for (size_t k = 0; k < outputs.size(); ++k) {
    graph->AddOutput(absl::StrCat("out", k), outputs[k], OutputKind::kResult);
  }
  auto executor = Compile(std::move(graph), {});
  EXPECT_TRUE(executor.ok()) << executor.status();
  if (!executor.ok()) return nullptr;
  std::copy(logits.begin(), logits.end(), (*executor)->Input("logits")->data<float>());
  std::copy(labels.begin(), labels.end(), (*executor)->Input("labels")->data<int32_t>());
  return std::move(*executor);
}

TEST(LossTest, SoftmaxCrossEntropyGradient) {
  testing::ExpectGradientsMatch(LossInputs({0, 3, 1, 4}),
                                [](Builder& b, const std::vector<Value*>& in) {
                                  return std::vector<Value*>{b.Op("SoftmaxCrossEntropy", in)[0]};
                                });
}

TEST(LossTest, SoftmaxCrossEntropyMatchesReference) {
  std::vector<GradCheckInput> in = LossInputs({2, 0, 4, 4});
  auto outputs = testing::RunForward(in, [](Builder& b, const std::vector<Value*>& values) {
    return b.Op("SoftmaxCrossEntropy", values);
  });
  ASSERT_EQ(outputs.size(), 2u);
  ASSERT_EQ(outputs[0].size(), 1u);
  ASSERT_EQ(outputs[1].size(), static_cast<size_t>(kRows * kClasses));
  double loss = 0.0;
  for (int64_t i = 0; i < kRows; ++i) {
    const float* row = &in[0].values[i * kClasses];
    double sum = 0.0;
    for (int64_t j = 0; j < kClasses; ++j) sum += std::exp(static_cast<double>(row[j]));
    for (int64_t j = 0; j < kClasses; ++j) {
      EXPECT_NEAR(outputs[1][i * kClasses + j], std::exp(row[j]) / sum, 1e-6) << i << ", " << j;
    }
    loss -= std::log(std::exp(static_cast<double>(row[static_cast<int>(in[1].values[i])])) / sum);
  }
  EXPECT_NEAR(outputs[0][0], loss / kRows, 1e-5);
}

// Logits around 1000 would overflow exp() without subtracting the row maximum.
TEST(LossTest, SoftmaxCrossEntropyIsStableForLargeLogits) {
  auto executor =
      CompileWithValues({1000, 1000, 999, -1000}, {0, 1}, [](Builder& b, Value* x, Value* y) {
        return b.Op("SoftmaxCrossEntropy", {x, y});
      });
  ASSERT_NE(executor, nullptr);
  ASSERT_TRUE(executor->Run().ok());
  // Row 0: -log(1/2); row 1: -log(e^-1999 / (1 + e^-1999)) = 1999.
  EXPECT_NEAR(executor->Output("out0")->data<float>()[0], (std::log(2.0) + 1999.0) / 2, 1e-3);
  const float* probs = executor->Output("out1")->data<float>();
  EXPECT_NEAR(probs[0], 0.5, 1e-6);
  EXPECT_NEAR(probs[2], 1.0, 1e-6);
  EXPECT_EQ(probs[3], 0.0f);
}

TEST(LossTest, LabelOutOfRangeIsAnError) {
  for (int32_t bad : {5, -1}) {
    std::vector<float> logits(3 * kClasses, 0.0f);
    auto executor = CompileWithValues(logits, {0, bad, 1}, [](Builder& b, Value* x, Value* y) {
      return b.Op("SoftmaxCrossEntropy", {x, y});
    });
    ASSERT_NE(executor, nullptr);
    absl::Status status = executor->Run();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    std::string message(status.message());
    for (std::string part : {std::string("SoftmaxCrossEntropy"), std::string("sample 1"),
                             absl::StrCat("label ", bad), std::string("[0, 5)")}) {
      EXPECT_NE(message.find(part), std::string::npos) << message;
    }
  }
}

// Ties go to the first index: row 0 (classes 1 and 2) and row 3 (all equal).
TEST(LossTest, ArgMaxAndAccuracyCountTakeTheFirstOfTies) {
  const std::vector<float> logits = {0,  3,  3,  1,     // argmax 1 (tie with 2)
                                     5,  1,  2,  0,     // argmax 0
                                     -1, -2, -3, -0.5,  // argmax 3
                                     2,  2,  2,  2};    // argmax 0 (all tied)
  auto executor = CompileWithValues(logits, {1, 2, 3, 1}, [](Builder& b, Value* x, Value* y) {
    return std::vector<Value*>{b.Op1("ArgMax", {x}), b.Op1("AccuracyCount", {x, y})};
  });
  ASSERT_NE(executor, nullptr);
  ASSERT_TRUE(executor->Run().ok());
  const int32_t* argmax = executor->Output("out0")->data<int32_t>();
  EXPECT_EQ(std::vector<int32_t>(argmax, argmax + 4), (std::vector<int32_t>{1, 0, 3, 0}));
  EXPECT_EQ(*executor->Output("out1")->data<int32_t>(), 2);  // rows 0 and 2
}

TEST(LossTest, ShapeErrorsNameTheOpAndShapes) {
  Graph graph;
  Builder b(&graph);
  Value* logits = b.Input("logits", {4, 5});
  EXPECT_TRUE(b.Op("SoftmaxCrossEntropy", {logits, b.Input("labels", {3}, DType::kI32)}).empty());
  std::string message(b.status().message());
  for (const char* part :
       {"SoftmaxCrossEntropy", "f32[4, 5]", "labels must be i32[4]", "got i32[3]"}) {
    EXPECT_NE(message.find(part), std::string::npos) << message;
  }
}

TEST(LossTest, ArgMaxOnlyAlongAxisOne) {
  Graph graph;
  Builder b(&graph);
  EXPECT_EQ(b.Op1("ArgMax", {b.Input("x", {4, 5})}, {{"axis", int64_t{0}}}), nullptr);
  std::string message(b.status().message());
  EXPECT_NE(message.find("only axis 1"), std::string::npos) << message;
}

}  // namespace
}  // namespace lockstep
