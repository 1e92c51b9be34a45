// A single process learns: LeNet-5 and ResNet-18 reach at least 95% held-out accuracy on the
// generated shape task (shapes_data.h), each well under a minute on one thread.

#include <gtest/gtest.h>

#include "tests/train/shapes_data.h"
#include "train/model.h"
#include "train/models.h"

namespace lockstep::train {
namespace {

constexpr int64_t kTrainImages = 1024;
constexpr int64_t kTestImages = 256;
constexpr int64_t kBatch = 32;

struct Task {
  LayerPtr net;
  int64_t channels;
  int64_t size;
  double lr;
  int epochs;
};

EvalResult TrainAndEvaluate(const Task& task) {
  testing::ShapeImages train = testing::MakeShapeImages(kTrainImages, task.channels, task.size, 1);
  testing::ShapeImages test = testing::MakeShapeImages(kTestImages, task.channels, task.size, 2);
  auto train_data = InMemoryDataSource::Create(
      train.images, train.labels,
      {.batch_size = kBatch, .shuffle = true, .drop_remainder = true, .seed = 3});
  auto test_data = InMemoryDataSource::Create(test.images, test.labels, {.batch_size = 100});
  EXPECT_TRUE(train_data.ok() && test_data.ok());
  const int64_t steps = task.epochs * kTrainImages / kBatch;
  Model model(task.net, SoftmaxCrossEntropy(),
              Momentum{.lr = WarmupLr(steps / 10, CosineLr(task.lr, steps - steps / 10)),
                       .momentum = 0.9,
                       .weight_decay = 1e-4},
              {.batch_size = kBatch, .image_shape = {task.channels, task.size, task.size}});
  absl::Status trained =
      model.Train(task.epochs, **train_data, {std::make_shared<LossMonitor>(16)});
  EXPECT_TRUE(trained.ok()) << trained;
  absl::StatusOr<EvalResult> result = model.Eval(**test_data);
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok()) return {};
  std::cout << "held-out accuracy " << result->accuracy << ", loss " << result->loss << "\n";
  EXPECT_EQ(result->samples, kTestImages);
  return *result;
}

TEST(LearnTest, LeNet5ReachesNinetyFivePercent) {
  EvalResult result = TrainAndEvaluate({models::LeNet5(testing::kShapeClasses, 1), 1, 32, 0.05, 4});
  EXPECT_GE(result.accuracy, 0.95);
}

TEST(LearnTest, ResNet18ReachesNinetyFivePercent) {
  EvalResult result = TrainAndEvaluate({models::ResNet18(testing::kShapeClasses), 3, 32, 0.05, 2});
  EXPECT_GE(result.accuracy, 0.95);
}

}  // namespace
}  // namespace lockstep::train
