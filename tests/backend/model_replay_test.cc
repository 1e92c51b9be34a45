// Steps recorded for replay (Executor::ReplayAfter) on a backend that cannot record: the tests'
// device, whose kernels run on the host. Training goes on kernel by kernel and one line says
// why; with replay off nothing is said. (Recording itself is a GPU's: the CUDA tests check it.)

#include <gtest/gtest.h>

#include <string>

#include "tests/backend/test_backend.h"
#include "tests/train/shapes_data.h"
#include "train/model.h"
#include "train/models.h"

namespace lockstep::test_backend {
namespace {

constexpr int64_t kBatch = 4;
constexpr int64_t kSize = 32;  // LeNet-5's input

// What training `steps` steps with replay_steps `replay` prints, and whether the
// model's steps ended up replayed.
std::pair<std::string, bool> TrainCapturingStdout(bool replay, int steps) {
  train::Model model(train::models::LeNet5(train::testing::kShapeClasses, 1),
                     train::SoftmaxCrossEntropy(), train::Momentum{.lr = 0.05},
                     {.batch_size = kBatch,
                      .image_shape = {1, kSize, kSize},
                      .device = TestDevice(),
                      .replay_steps = replay});
  const auto data = train::testing::MakeShapeImages(kBatch * steps, 1, kSize, /*seed=*/4);
  auto source = *train::InMemoryDataSource::Create(data.images, data.labels,
                                                   {.batch_size = kBatch, .drop_remainder = true});
  ::testing::internal::CaptureStdout();
  const absl::Status trained = model.Train(1, *source);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_TRUE(trained.ok()) << trained;
  return {out, model.train_executor()->replaying()};
}

TEST(ModelReplayTest, ABackendThatCannotRecordRunsKernelByKernelAndSaysSoOnce) {
  const auto [out, replaying] = TrainCapturingStdout(/*replay=*/true, 5);
  EXPECT_FALSE(replaying);
  const std::string line =
      "steps run kernel by kernel: the test backend cannot record work to launch again";
  const size_t at = out.find(line);
  EXPECT_NE(at, std::string::npos) << out;
  EXPECT_EQ(out.find(line, at + 1), std::string::npos) << "said more than once: " << out;
}

TEST(ModelReplayTest, ReplayOffSaysNothing) {
  const auto [out, replaying] = TrainCapturingStdout(/*replay=*/false, 5);
  EXPECT_FALSE(replaying);
  EXPECT_EQ(out.find("kernel by kernel"), std::string::npos) << out;
}

}  // namespace
}  // namespace lockstep::test_backend
