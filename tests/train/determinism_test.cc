// Same weights, same input: ResNet-50's logits and loss do not change between runs, nor between
// 1 and 2 OpenMP threads.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/rng.h"
#include "core/threads.h"
#include "train/model.h"
#include "train/models.h"

namespace lockstep::train {
namespace {

constexpr int64_t kBatch = 2;
constexpr int64_t kSize = 64;
constexpr int64_t kClasses = 10;

struct Outputs {
  Tensor logits;            // eval graph (running statistics)
  double eval_loss = 0.0;   // eval graph
  double train_loss = 0.0;  // training graph (batch statistics), before its update
};

Batch FixedBatch() {
  Batch batch{Tensor::Empty({kBatch, 3, kSize, kSize}, DType::kF32),
              Tensor::Empty({kBatch}, DType::kI32)};
  Philox(11, 0).Normal(batch.images.data<float>(), batch.images.numel(), 0.0f, 1.0f);
  batch.labels.data<int32_t>()[0] = 3;
  batch.labels.data<int32_t>()[1] = 7;
  return batch;
}

// A fresh ResNet-50 (seed 5) on `threads` threads: the eval graph twice, then one training step.
Outputs RunResNet50(int threads) {
  Model model(
      models::ResNet50(kClasses), SoftmaxCrossEntropy(), Momentum{.lr = 0.1},
      {.batch_size = kBatch, .image_shape = {3, kSize, kSize}, .seed = 5, .num_threads = threads});
  const Batch batch = FixedBatch();
  absl::StatusOr<BatchResult> first = model.EvalBatch(batch);
  absl::StatusOr<BatchResult> second = model.EvalBatch(batch);
  EXPECT_TRUE(first.ok() && second.ok()) << first.status() << second.status();
  if (!first.ok() || !second.ok()) return {};
  EXPECT_EQ(
      std::memcmp(first->logits.raw_data(), second->logits.raw_data(), first->logits.nbytes()), 0)
      << "two runs on " << threads << " thread(s) differ";
  absl::StatusOr<double> train_loss = model.TrainStep(batch);
  EXPECT_TRUE(train_loss.ok()) << train_loss.status();
  return {first->logits, first->loss, train_loss.ok() ? *train_loss : 0.0};
}

TEST(DeterminismTest, ResNet50LogitsAndLossAcrossRunsAndThreadCounts) {
  // Each run checks two evaluations against each other; the second model, built afresh,
  // must draw identical weights (Philox) and compute identical numbers on twice the threads.
  const Outputs one = RunResNet50(1);
  const Outputs two = RunResNet50(2);
  SetNumThreads(1);
  ASSERT_TRUE(one.logits.defined() && two.logits.defined());
  ASSERT_EQ(one.logits.shape(), (Shape{kBatch, kClasses}));
  EXPECT_EQ(std::memcmp(one.logits.raw_data(), two.logits.raw_data(), one.logits.nbytes()), 0);
  EXPECT_EQ(one.eval_loss, two.eval_loss);
  EXPECT_EQ(one.train_loss, two.train_loss);
  EXPECT_TRUE(std::isfinite(one.train_loss));
}

}  // namespace
}  // namespace lockstep::train
