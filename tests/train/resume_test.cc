// Checkpoints while training (ModelCheckpoint) and resume: a run stopped after step k and
// resumed from its newest checkpoint ends with every parameter and state bit for bit equal to an
// uninterrupted run, for shuffled in-memory data and for the JPEG pipeline with random crops and
// flips.

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <string>

#include "absl/strings/str_join.h"
#include "ckpt/inspect.h"
#include "ckpt/manifest.h"
#include "ckpt/reader.h"
#include "graph/serialize.h"
#include "tests/testing/temp_dir.h"
#include "tests/train/resume_util.h"
#include "tests/train/shapes_data.h"
#include "train/checkpoint_callback.h"
#include "train/dataset_source.h"
#include "train/model.h"

namespace lockstep::train {
namespace {

using lockstep::testing::TempDir;
using testing::StopAfter;
using testing::TinyModel;
using testing::VariableBytes;

constexpr int64_t kEpochs = 2;
constexpr int64_t kStepsPerEpoch = 10;  // 40 samples in batches of 4
constexpr char kPrefix[] = "tiny";

using MakeData = std::function<std::unique_ptr<DataSource>()>;

struct Interruption {
  int64_t stop_step;
  ckpt::CheckpointConfig config;
  int64_t resumed_step;  // of the newest complete checkpoint
  int64_t resumed_epochs_done;
  int64_t accumulation_steps = 1;
  std::optional<DynamicLossScale> dynamic_loss_scale;
  AmpLevel amp_level = AmpLevel::kO0;
};

// Trains uninterrupted, then stopped and resumed from a fresh model of another seed; compares.
void ExpectResumeIsExact(const MakeData& make_data, const Interruption& run) {
  SCOPED_TRACE(absl::StrCat("stopped after step ", run.stop_step));
  const int64_t accumulation = run.accumulation_steps;
  auto options = [&](uint64_t seed) {
    ModelOptions options{.seed = seed,
                         .accumulation_steps = accumulation,
                         .dynamic_loss_scale = run.dynamic_loss_scale};
    options.amp_level = run.amp_level;
    return options;
  };
  Model reference = TinyModel(options(1));
  ASSERT_TRUE(reference.Train(kEpochs, *make_data()).ok());

  TempDir dir;
  ckpt::CheckpointConfig config = run.config;
  config.directory = dir.path();
  {
    Model stopped = TinyModel(options(1));
    absl::Status status = stopped.Train(kEpochs, *make_data(),
                                        {std::make_shared<ModelCheckpoint>(config, kPrefix),
                                         std::make_shared<StopAfter>(run.stop_step)});
    ASSERT_TRUE(absl::IsCancelled(status)) << status;
  }
  Model resumed = TinyModel(options(2));
  absl::StatusOr<bool> found = ResumeFromCheckpoint(resumed, dir.path(), kPrefix);
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_TRUE(*found);
  EXPECT_EQ(resumed.global_step(), run.resumed_step);
  EXPECT_EQ(resumed.epochs_done(), run.resumed_epochs_done);
  absl::Status status = resumed.Train(kEpochs - resumed.epochs_done(), *make_data(),
                                      {std::make_shared<ModelCheckpoint>(config, kPrefix)});
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(resumed.global_step(), kEpochs * kStepsPerEpoch / accumulation);
  EXPECT_EQ(resumed.epochs_done(), kEpochs);
  const std::map<std::string, std::string> expected = VariableBytes(reference);
  const std::map<std::string, std::string> actual = VariableBytes(resumed);
  ASSERT_EQ(actual.size(), expected.size());
  for (const auto& [name, bytes] : expected) EXPECT_TRUE(actual.at(name) == bytes) << name;
}

const ckpt::CheckpointConfig kEveryThreeSteps = {.save_checkpoint_steps = 3,
                                                 .keep_checkpoint_max = 2};
const ckpt::CheckpointConfig kEveryEpoch = {.save_checkpoint_steps = 0,
                                            .save_checkpoint_epochs = 1};

TEST(ResumeTest, ShuffledInMemoryDataResumesBitForBit) {
  testing::ShapeImages shapes = testing::MakeShapeImages(42, 3, 16, 4);
  const MakeData make_data = [&] {
    auto source = InMemoryDataSource::Create(
        shapes.images, shapes.labels,
        {.batch_size = 4, .shuffle = true, .drop_remainder = true, .seed = 9});
    EXPECT_TRUE(source.ok());
    return std::unique_ptr<DataSource>(std::move(*source));
  };
  ExpectResumeIsExact(make_data, {7, kEveryThreeSteps, 6, 0});    // mid-epoch
  ExpectResumeIsExact(make_data, {10, kEveryThreeSteps, 9, 0});   // before the epoch's last batch
  ExpectResumeIsExact(make_data, {13, kEveryThreeSteps, 12, 1});  // in the second epoch
  ExpectResumeIsExact(make_data, {14, kEveryEpoch, 10, 1});       // from the first epoch's end
  // Two micro-batches per update, stopped in the first of update 4: resumed from update 2, not
  // from between update 4's micro-batches.
  ExpectResumeIsExact(make_data, {4, {.save_checkpoint_steps = 2}, 2, 0, 2});
  // Dynamic loss scaling, growing every 4 finite steps: resumed at step 6 with 2 of a window
  // counted, the scale and the count go on from the checkpoint.
  ExpectResumeIsExact(make_data,
                      {.stop_step = 8,
                       .config = kEveryThreeSteps,
                       .resumed_step = 6,
                       .resumed_epochs_done = 0,
                       .dynamic_loss_scale = DynamicLossScale{.initial = 1024.0, .window = 4}});
  // Mixed precision: the checkpoint holds the float32 master weights, from which the resumed
  // run makes the same bf16 copies.
  ExpectResumeIsExact(make_data, {.stop_step = 7,
                                  .config = kEveryThreeSteps,
                                  .resumed_step = 6,
                                  .resumed_epochs_done = 0,
                                  .amp_level = AmpLevel::kO2});
}

// A float32 run's checkpoint resumes at O2 (the variables are float32 at every level), and the
// O2 run's checkpoints resume in float32: each resumed run starts from the variables saved.
TEST(ResumeTest, ResumesAtAnotherAmpLevelAndBack) {
  testing::ShapeImages shapes = testing::MakeShapeImages(40, 3, 16, 4);
  auto make_data = [&] {
    auto source = InMemoryDataSource::Create(shapes.images, shapes.labels,
                                             {.batch_size = 4, .drop_remainder = true});
    EXPECT_TRUE(source.ok());
    return std::move(*source);
  };
  TempDir dir;
  const ckpt::CheckpointConfig config = {
      .save_checkpoint_steps = 5, .keep_checkpoint_max = 0, .directory = dir.path()};
  std::map<std::string, std::string> saved;
  for (const AmpLevel level : {AmpLevel::kO0, AmpLevel::kO2, AmpLevel::kO0}) {
    SCOPED_TRACE(AmpLevelName(level));
    ModelOptions options{.seed = 1};
    options.amp_level = level;
    Model model = TinyModel(options);
    absl::StatusOr<bool> found = ResumeFromCheckpoint(model, dir.path(), kPrefix);
    ASSERT_TRUE(found.ok()) << found.status();
    ASSERT_EQ(*found, !saved.empty());
    if (*found) {
      EXPECT_TRUE(VariableBytes(model) == saved);
    }
    const int64_t stop = model.global_step() + 5;
    absl::Status status = model.Train(
        kEpochs, *make_data(),
        {std::make_shared<ModelCheckpoint>(config, kPrefix), std::make_shared<StopAfter>(stop)});
    ASSERT_TRUE(absl::IsCancelled(status)) << status;
    ASSERT_EQ(model.global_step(), stop);
    saved = VariableBytes(model);
  }
  // The amp level is a choice of each run, like the layouts: every step saved at any level
  // still verifies against the graph file the last run left.
  absl::StatusOr<std::vector<ckpt::proto::Manifest>> steps =
      ckpt::ListManifests(dir.path(), kPrefix);
  ASSERT_TRUE(steps.ok()) << steps.status();
  ASSERT_EQ(steps->size(), 3u);
  for (const ckpt::proto::Manifest& step : *steps) {
    const ckpt::VerifyReport report = ckpt::VerifyStep(dir.path(), step);
    EXPECT_TRUE(report.problems.empty()) << absl::StrJoin(report.problems, "; ");
  }
}

TEST(ResumeTest, JpegPipelineWithRandomTransformsResumesBitForBit) {
  testing::SampleFolder folder;
  const MakeData make_data = [&] {
    return std::make_unique<DatasetSource>(testing::SamplePipeline(folder.train(), 4, true));
  };
  ExpectResumeIsExact(make_data, {14, kEveryThreeSteps, 12, 1});
}

// A step saved at the epoch's last batch holds the next epoch's start, so that a resume starts
// the next epoch; it is saved once, not again at the epoch's end.
TEST(ResumeTest, EpochEndOfASavedStepResumesAtTheNextEpoch) {
  testing::ShapeImages shapes = testing::MakeShapeImages(40, 3, 16, 4);
  auto data = InMemoryDataSource::Create(shapes.images, shapes.labels,
                                         {.batch_size = 4, .drop_remainder = true});
  ASSERT_TRUE(data.ok());
  TempDir dir;
  Model model = TinyModel({.seed = 1});
  ASSERT_TRUE(model
                  .Train(1, **data,
                         {std::make_shared<ModelCheckpoint>(
                             ckpt::CheckpointConfig{.save_checkpoint_steps = 5,
                                                    .keep_checkpoint_max = 0,
                                                    .directory = dir.path()},
                             kPrefix)})
                  .ok());
  absl::StatusOr<ckpt::CheckpointData> last = ckpt::ReadCheckpoint(dir.Join("tiny_0-1_10.ckpt"));
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(*last->Int64Scalar(kDataEpochName), 1);
  EXPECT_EQ(*last->Int64Scalar(kDataBatchName), 0);
  Model resumed = TinyModel({.seed = 1});
  ASSERT_TRUE(ResumeFromCheckpoint(resumed, dir.path(), kPrefix).value_or(false));
  EXPECT_EQ(resumed.epochs_done(), 1);
  EXPECT_EQ(resumed.global_step(), 10);
}

TEST(ResumeTest, CheckpointHoldsEveryVariableTheStepAndTheDataPosition) {
  testing::ShapeImages shapes = testing::MakeShapeImages(40, 3, 16, 4);
  auto data = InMemoryDataSource::Create(shapes.images, shapes.labels,
                                         {.batch_size = 4, .drop_remainder = true});
  ASSERT_TRUE(data.ok());
  TempDir dir;
  Model model = TinyModel({.seed = 1});
  auto checkpoint = std::make_shared<ModelCheckpoint>(
      ckpt::CheckpointConfig{
          .save_checkpoint_steps = 4, .keep_checkpoint_max = 1, .directory = dir.path()},
      kPrefix);
  ASSERT_TRUE(model.Train(1, **data, {checkpoint, std::make_shared<StopAfter>(8)}).code() ==
              absl::StatusCode::kCancelled);
  // Step 8 is kept, step 4 pruned with its manifest; the graph is saved once.
  EXPECT_FALSE(std::filesystem::exists(dir.Join("tiny_0-1_4.ckpt")));
  EXPECT_FALSE(std::filesystem::exists(dir.Join("tiny-1_4.manifest")));
  EXPECT_TRUE(std::filesystem::exists(dir.Join("tiny_0-1_8.ckpt")));
  EXPECT_TRUE(std::filesystem::exists(dir.Join("tiny-1_8.manifest")));
  EXPECT_TRUE(std::filesystem::exists(dir.Join("tiny_0-graph.meta")));
  absl::StatusOr<ckpt::proto::Manifest> manifest = ckpt::LatestCompleteStep(dir.path(), kPrefix);
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  EXPECT_EQ(manifest->global_step(), 8);
  EXPECT_EQ(manifest->world_size(), 1);
  EXPECT_EQ(manifest->graph_fingerprint(), Fingerprint(model.train_executor()->graph()));

  absl::StatusOr<ckpt::CheckpointData> file = ckpt::ReadCheckpoint(dir.Join("tiny_0-1_8.ckpt"));
  ASSERT_TRUE(file.ok()) << file.status();
  for (const char* name :
       {"conv.weight", "bn.gamma", "bn.beta", "bn.moving_mean", "bn.moving_variance", "fc.weight",
        "fc.bias", "moments.conv.weight", "moments.bn.gamma", "moments.fc.bias"}) {
    const ckpt::Entry* entry = file->Find(name);
    ASSERT_NE(entry, nullptr) << name;
    absl::StatusOr<Tensor> variable = model.Variable(name);
    ASSERT_TRUE(variable.ok()) << name;
    EXPECT_EQ(entry->shape, variable->shape()) << name;
    EXPECT_TRUE(entry->content ==
                std::string(static_cast<const char*>(variable->raw_data()), variable->nbytes()))
        << name;
  }
  EXPECT_EQ(*file->Int64Scalar(ckpt::kEpochName), 1);
  EXPECT_EQ(*file->Int64Scalar(ckpt::kStepName), 8);
  EXPECT_EQ(*file->Int64Scalar(kDataEpochName), 0);
  EXPECT_EQ(*file->Int64Scalar(kDataBatchName), 8);
}

TEST(ResumeTest, NothingToResumeLeavesTheModelAsItWas) {
  TempDir dir;
  Model model = TinyModel({.seed = 1});
  absl::StatusOr<bool> found = ResumeFromCheckpoint(model, dir.path(), kPrefix);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_FALSE(*found);
  EXPECT_EQ(model.global_step(), 0);
  EXPECT_EQ(model.epochs_done(), 0);
}

TEST(ResumeTest, ACheckpointOfAnotherModelIsAClearError) {
  testing::ShapeImages shapes = testing::MakeShapeImages(8, 3, 16, 4);
  auto data = InMemoryDataSource::Create(shapes.images, shapes.labels, {.batch_size = 4});
  ASSERT_TRUE(data.ok());
  TempDir dir;
  Model small = TinyModel({.seed = 1});
  ASSERT_TRUE(small
                  .Train(1, **data,
                         {std::make_shared<ModelCheckpoint>(
                             ckpt::CheckpointConfig{.directory = dir.path()}, kPrefix)})
                  .ok());
  Model other(testing::TinyNet(3), SoftmaxCrossEntropy(), Momentum{},
              {.batch_size = 4, .image_shape = {3, 16, 16}});
  absl::StatusOr<bool> found = ResumeFromCheckpoint(other, dir.path(), kPrefix);
  ASSERT_FALSE(found.ok());
  EXPECT_NE(found.status().message().find("fc.weight"), std::string::npos) << found.status();
}

}  // namespace
}  // namespace lockstep::train
