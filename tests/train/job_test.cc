// The job logic lockstep-train and the Python module share (train/job_checks.h, train/job_run.h),
// called as a caller other than the binary calls it: its own wording in the messages, its own
// memory check, its own stream. The binary's messages are checked by train_flags_test.sh.

#include <gtest/gtest.h>

#include <sstream>
#include <vector>

#include "parallel/communicator.h"
#include "train/job_checks.h"
#include "train/job_run.h"
#include "train/loss.h"
#include "train/models.h"

namespace lockstep::train {
namespace {

const JobWording kWording{.model = "lenet5",
                          .image_size = "image_size=32",
                          .batch_size = "batch_size=64",
                          .grad_accum = "grad_accum=6",
                          .train_set = "shapes",
                          .held_out = "val_fraction=0.5"};

TEST(JobChecksTest, StepsPerEpochNameTheCallersSettings) {
  EXPECT_TRUE(CheckStepsPerEpoch(40, 5, 8, 5, kWording).ok());
  EXPECT_EQ(CheckStepsPerEpoch(40, 0, 64, 1, kWording).message(),
            "batch_size=64 makes batches of 64 images a rank, but a rank's share of shapes is 40 "
            "image(s) (val_fraction=0.5 held out the rest): not one training step per epoch");
  JobWording whole = kWording;
  whole.held_out.clear();
  EXPECT_EQ(CheckStepsPerEpoch(40, 5, 8, 6, whole).message(),
            "grad_accum=6 needs 6 batches for one update, but an epoch has 5 batch(es) of 8 images "
            "a rank: not one optimizer step per epoch");
}

struct Need {
  double bytes_per_rank;
  int ranks;
  std::string what;
};

TEST(JobChecksTest, MemoryChecksTheInputBatchThenThePlan) {
  const LayerPtr net = models::LeNet5(4, 1);
  std::vector<Need> needs;
  auto record = [&needs](double bytes, int ranks, absl::string_view what) {
    needs.push_back({bytes, ranks, std::string(what)});
    return absl::OkStatus();
  };
  ASSERT_TRUE(CheckTrainingMemory(*net, 8, {1, 32, 32}, 2, kWording, record).ok());
  ASSERT_EQ(needs.size(), 2u);
  EXPECT_EQ(needs[0].bytes_per_rank, 8.0 * 32 * 32 * sizeof(float));
  EXPECT_EQ(needs[0].what,
            "the input batch of image_size=32 with batch_size=64 (8 images a rank, 2 rank(s) on "
            "this host)");
  EXPECT_EQ(needs[1].ranks, 2);
  EXPECT_EQ(needs[1].what,
            "lenet5's training graph at image_size=32 with batch_size=64 (8 images a rank, 2 "
            "rank(s) on this host)");
  // The plan holds the input batch, the activations and their gradients, and the parameters.
  absl::StatusOr<double> planned = PlannedTrainingBytes(*net, 8, {1, 32, 32});
  ASSERT_TRUE(planned.ok()) << planned.status();
  EXPECT_EQ(needs[1].bytes_per_rank, *planned);
  EXPECT_GT(*planned, needs[0].bytes_per_rank);
  absl::StatusOr<double> larger = PlannedTrainingBytes(*net, 16, {1, 32, 32});
  ASSERT_TRUE(larger.ok()) << larger.status();
  EXPECT_GT(*larger, *planned);

  // A refused input batch is never planned: at such sizes the plan's counts may overflow.
  needs.clear();
  auto refuse = [&needs](double bytes, int ranks, absl::string_view what) {
    needs.push_back({bytes, ranks, std::string(what)});
    return absl::ResourceExhaustedError(what);
  };
  EXPECT_EQ(CheckTrainingMemory(*net, 8, {1, 32, 32}, 1, kWording, refuse).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(needs.size(), 1u);
}

Model SmallLeNet() {
  return Model(models::LeNet5(4, 1), SoftmaxCrossEntropy(), Momentum{.lr = 0.05},
               {.batch_size = 4, .image_shape = {1, 16, 16}});
}

TEST(JobRunTest, UpdateCounterSaysWhyNoUpdateWasApplied) {
  Model model = SmallLeNet();  // at global step 0
  UpdateCounter none;
  EXPECT_EQ(none.Outcome(2, 0.0).message(),
            "trained 2 epoch(s) without applying one optimizer update: no training step ran");

  UpdateCounter skipped;
  // A micro-batch of an accumulation (the model's step did not advance to it), then an update
  // skipped for non-finite gradients.
  ASSERT_TRUE(skipped.OnStepEnd(model, {.global_step = 1}).ok());
  ASSERT_TRUE(skipped.OnStepEnd(model, {.global_step = 0, .update_skipped = true}).ok());
  EXPECT_EQ(skipped.Outcome(1, 1024).message(),
            "trained 1 epoch(s) without applying one optimizer update: every update of 2 step(s) "
            "was skipped for non-finite gradients (loss scale now 1024)");

  UpdateCounter applied;
  ASSERT_TRUE(applied.OnStepEnd(model, {.global_step = 0}).ok());
  EXPECT_TRUE(applied.Outcome(1, 0.0).ok());
}

TEST(JobRunTest, EpochReportWritesToTheCallersStream) {
  Model model = SmallLeNet();
  std::ostringstream out;
  EpochReport report(nullptr, 3, parallel::MakeSelfCommunicator(), nullptr, &out);
  ASSERT_TRUE(
      report
          .OnEpochEnd(model,
                      {.epoch = 2, .steps = 4, .images = 16, .seconds = 2.0, .mean_loss = 0.5})
          .ok());
  EXPECT_EQ(out.str(), "epoch 2/3: train loss 0.5000, 8.0 images/s, 2.0 s\n");
}

}  // namespace
}  // namespace lockstep::train
