// The input feed (train/input_feed.h) on the tests' device: a device that is not the CPU, so
// batches go through the feed's slots, copies and events as on a GPU. Its copies finish before
// they return, so what is checked here is the order the feed issues its work in (the plan a
// GPU's streams follow) and that pipelined training computes what step-by-step training does.

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/backend/test_backend.h"
#include "tests/train/shapes_data.h"
#include "train/model.h"
#include "train/models.h"

namespace lockstep::test_backend {
namespace {

using train::InputFeed;
using train::Model;

constexpr int64_t kBatch = 4;
constexpr int64_t kSize = 32;  // LeNet-5's input

Model LeNet(int64_t accumulation_steps, Device device = TestDevice()) {
  // A learning rate that changes every step, so that a step given another's shows.
  train::LrSchedule lr([](int64_t step) { return 0.05 / static_cast<double>(step + 1); });
  return Model(train::models::LeNet5(train::testing::kShapeClasses, 1),
               train::SoftmaxCrossEntropy(), train::Momentum{.lr = lr, .momentum = 0.9},
               {.batch_size = kBatch,
                .image_shape = {1, kSize, kSize},
                .seed = 3,
                .accumulation_steps = accumulation_steps,
                .device = device});
}

std::unique_ptr<train::InMemoryDataSource> Batches(int64_t count) {
  const auto data = train::testing::MakeShapeImages(kBatch * count, 1, kSize, /*seed=*/9);
  return *train::InMemoryDataSource::Create(data.images, data.labels,
                                            {.batch_size = kBatch, .drop_remainder = true});
}

std::vector<std::string> PlanOf(const InputFeed& feed) {
  std::vector<std::string> plan;
  for (const InputFeed::Op& op : feed.plan()) plan.push_back(op.ToString());
  return plan;
}

// The position of `entry` in `plan`, failing the test when it is missing.
size_t Find(const std::vector<std::string>& plan, const std::string& entry) {
  auto it = std::find(plan.begin(), plan.end(), entry);
  EXPECT_NE(it, plan.end()) << "no '" << entry << "' in the plan";
  return static_cast<size_t>(it - plan.begin());
}

TEST(InputFeedTest, TheNextBatchIsCopiedWhileAStepComputes) {
  Model model = LeNet(1);
  ASSERT_TRUE(model.Compile().ok());
  model.train_feed()->RecordPlan(true);
  auto data = Batches(3);
  absl::Status trained = model.Train(1, *data);
  ASSERT_TRUE(trained.ok()) << trained;
  const std::vector<std::string> want = {
      "copy stream: copy batch 0",
      "copy stream: record batch 0 copied",
      "compute stream: wait for batch 0 copied",
      "compute stream: feed batch 0",
      "compute stream: record batch 0 fed",
      "compute stream: run step on batch 0",
      "host: wait for batch 0 copied",  // before the source reuses its memory
      "copy stream: copy batch 1",      // while step 0 computes
      "copy stream: record batch 1 copied",
      "host: wait for step on batch 0",  // its loss
      "compute stream: wait for batch 1 copied",
      "compute stream: feed batch 1",
      "compute stream: record batch 1 fed",
      "compute stream: run step on batch 1",
      "host: wait for batch 1 copied",
      "copy stream: wait for batch 0 fed",  // slot 0 is free again: not a wait for step 1
      "copy stream: copy batch 2",
      "copy stream: record batch 2 copied",
      "host: wait for step on batch 1",
      "compute stream: wait for batch 2 copied",
      "compute stream: feed batch 2",
      "compute stream: record batch 2 fed",
      "compute stream: run step on batch 2",
      "host: wait for batch 2 copied",
      "host: wait for step on batch 2",
  };
  EXPECT_EQ(PlanOf(*model.train_feed()), want);
}

// Over a longer epoch, every copy of batch k overlaps step k-1 and waits on the copy stream only
// for the feed of batch k-2, recorded before step k-1 was queued; between a batch's feed and its
// step's launch the host waits for nothing.
TEST(InputFeedTest, NoCopyWaitsForTheStepBeforeItAndNoStepWaitsForTheHost) {
  constexpr int kBatches = 8;
  Model model = LeNet(1);
  ASSERT_TRUE(model.Compile().ok());
  model.train_feed()->RecordPlan(true);
  auto data = Batches(kBatches);
  ASSERT_TRUE(model.Train(1, *data).ok());
  const std::vector<std::string> plan = PlanOf(*model.train_feed());
  for (int k = 1; k < kBatches; ++k) {
    const std::string batch = "batch " + std::to_string(k);
    const std::string before = "batch " + std::to_string(k - 1);
    const size_t copy = Find(plan, "copy stream: copy " + batch);
    const size_t step_before = Find(plan, "compute stream: run step on " + before);
    EXPECT_LT(step_before, copy) << batch;
    EXPECT_LT(copy, Find(plan, "host: wait for step on " + before)) << batch;
    const size_t previous_copy = Find(plan, "copy stream: copy " + before);
    for (size_t i = previous_copy + 1; i < copy; ++i) {
      if (plan[i].starts_with("copy stream: wait for ")) {
        EXPECT_EQ(plan[i], "copy stream: wait for batch " + std::to_string(k - 2) + " fed");
        EXPECT_LT(Find(plan, "compute stream: record batch " + std::to_string(k - 2) + " fed"),
                  step_before);
      }
    }
    const size_t fed = Find(plan, "compute stream: wait for " + batch + " copied");
    const size_t run = Find(plan, "compute stream: run step on " + batch);
    for (size_t i = fed; i < run; ++i) EXPECT_FALSE(plan[i].starts_with("host:")) << plan[i];
  }
}

// Train stages each batch with its step's learning rate (or accumulation factor) before the
// step before it has finished; the parameters come out as from one TrainStep at a time. On the
// tests' device, and on the CPU with gradient accumulation (two graphs taking turns; the tests'
// device has no kernel for accumulation's Add).
struct PipelineCase {
  Device device;
  int64_t accumulation_steps;
};

class PipelinedTrainingTest : public ::testing::TestWithParam<PipelineCase> {};

TEST_P(PipelinedTrainingTest, EqualsOneStepAtATime) {
  constexpr int kBatches = 6;
  const PipelineCase& c = GetParam();
  Model pipelined = LeNet(c.accumulation_steps, c.device);
  Model stepped = LeNet(c.accumulation_steps, c.device);
  auto data = Batches(kBatches);
  absl::Status trained = pipelined.Train(1, *data);
  ASSERT_TRUE(trained.ok()) << trained;
  ASSERT_TRUE(data->Reset(0).ok());
  train::Batch batch;
  while (*data->Next(&batch)) ASSERT_TRUE(stepped.TrainStep(batch).ok());
  EXPECT_EQ(pipelined.global_step(), kBatches / c.accumulation_steps);
  EXPECT_EQ(stepped.global_step(), kBatches / c.accumulation_steps);
  for (const auto& spec : pipelined.parameters()) {
    const Tensor want = *stepped.Variable(spec.name), got = *pipelined.Variable(spec.name);
    EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), want.nbytes()), 0) << spec.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, PipelinedTrainingTest,
                         ::testing::Values(PipelineCase{TestDevice(), 1},
                                           PipelineCase{Device::CPU(), 2}),
                         [](const auto& info) {
                           return absl::StrCat(DeviceTypeName(info.param.device.type), "_",
                                               info.param.accumulation_steps);
                         });

TEST(InputFeedTest, MisuseIsAnErrorThatSaysWhat) {
  InputFeed feed(TestDevice(), std::nullopt);
  const Tensor images = Tensor::Zeros({2, 1, 4, 4}, DType::kF32);
  const Tensor labels = Tensor::Zeros({2}, DType::kI32);
  const Tensor into_images = Tensor::Zeros({2, 1, 4, 4}, DType::kF32, TestDevice());
  const Tensor into_labels = Tensor::Zeros({2}, DType::kI32, TestDevice());
  absl::StatusOr<int64_t> none = feed.Feed(into_images, into_labels, Tensor());
  EXPECT_EQ(none.status().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(feed.Stage(images, labels, 0.1f).ok());
  ASSERT_TRUE(feed.Stage(images, labels, 0.1f).ok());
  absl::Status third = feed.Stage(images, labels, 0.1f);
  EXPECT_NE(third.message().find("staging batch 2 while batch 0 and the next wait to be fed"),
            std::string::npos)
      << third;
  const Tensor wrong = Tensor::Zeros({2, 1, 4, 5}, DType::kF32, TestDevice());
  absl::StatusOr<int64_t> mismatched = feed.Feed(wrong, into_labels, Tensor());
  EXPECT_NE(mismatched.status().message().find("feeding f32[2, 1, 4, 4] into a graph input of "
                                               "f32[2, 1, 4, 5]"),
            std::string::npos)
      << mismatched.status();
}

}  // namespace
}  // namespace lockstep::test_backend
