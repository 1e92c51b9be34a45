// The ImageFolder pipeline behind Model: epochs of batches, starting an epoch at a batch (resume),
// and validation shards that together score every image once.

#include "train/dataset_source.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/train/resume_util.h"
#include "tests/train/shapes_data.h"
#include "train/model.h"

namespace lockstep::train {
namespace {

using testing::SampleFolder;
using testing::SamplePipeline;

// The bytes of a batch's images and labels.
std::string Bytes(const Batch& batch) {
  return std::string(static_cast<const char*>(batch.images.raw_data()), batch.images.nbytes()) +
         std::string(static_cast<const char*>(batch.labels.raw_data()), batch.labels.nbytes());
}

std::vector<std::string> ReadEpoch(DataSource& source) {
  std::vector<std::string> batches;
  Batch batch;
  while (true) {
    absl::StatusOr<bool> more = source.Next(&batch);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) return batches;
    batches.push_back(Bytes(batch));
  }
}

TEST(DatasetSourceTest, ReadsOneEpochPerReset) {
  SampleFolder folder;
  DatasetSource source(SamplePipeline(folder.train(), 8, /*augment=*/true));
  ASSERT_TRUE(source.Reset(0).ok());
  Batch batch;
  ASSERT_TRUE(source.Next(&batch).value_or(false));
  EXPECT_EQ(batch.images.shape(), (Shape{8, 3, 16, 16}));
  EXPECT_EQ(batch.images.dtype(), DType::kF32);
  EXPECT_EQ(batch.labels.shape(), (Shape{8}));
  EXPECT_EQ(batch.labels.dtype(), DType::kI32);
  for (int64_t i = 0; i < 8; ++i) {
    EXPECT_GE(batch.labels.data<int32_t>()[i], 0);
    EXPECT_LT(batch.labels.data<int32_t>()[i], testing::kSampleClasses);
  }

  ASSERT_TRUE(source.Reset(0).ok());
  const std::vector<std::string> epoch0 = ReadEpoch(source);
  EXPECT_EQ(epoch0.size(), 5u);  // 40 images in batches of 8
  EXPECT_EQ(static_cast<int64_t>(epoch0.size()), source.dataset().BatchesPerEpoch());
  EXPECT_EQ(source.Stats().images, 40);
  ASSERT_TRUE(source.Reset(1).ok());
  EXPECT_NE(ReadEpoch(source), epoch0);  // a new order and new crops
  ASSERT_TRUE(source.Reset(0).ok());
  EXPECT_EQ(ReadEpoch(source), epoch0);  // a function of (seed, epoch) alone
}

TEST(DatasetSourceTest, ResetAtStartsTheEpochAtABatch) {
  SampleFolder folder;
  DatasetSource pipeline(SamplePipeline(folder.train(), 4, /*augment=*/true));
  testing::ShapeImages shapes = testing::MakeShapeImages(22, 1, 8, 3);
  auto in_memory = InMemoryDataSource::Create(shapes.images, shapes.labels,
                                              {.batch_size = 4, .shuffle = true, .seed = 2});
  ASSERT_TRUE(in_memory.ok());
  for (DataSource* source : std::vector<DataSource*>{&pipeline, in_memory->get()}) {
    ASSERT_TRUE(source->Reset(3).ok());
    const std::vector<std::string> whole = ReadEpoch(*source);
    ASSERT_GT(whole.size(), 3u);
    ASSERT_TRUE(source->ResetAt(3, 3).ok());
    EXPECT_EQ(ReadEpoch(*source), std::vector<std::string>(whole.begin() + 3, whole.end()));
    ASSERT_TRUE(source->ResetAt(3, whole.size()).ok());
    EXPECT_TRUE(ReadEpoch(*source).empty());
  }
}

TEST(DatasetSourceTest, RejectsRepeatAndNextBeforeReset) {
  SampleFolder folder;
  DatasetSource repeated(SamplePipeline(folder.train(), 4, true).Repeat(2));
  absl::Status status = repeated.Reset(0);
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
  EXPECT_NE(status.message().find("Repeat"), std::string::npos) << status;
  Batch batch;
  EXPECT_TRUE(absl::IsFailedPrecondition(repeated.Next(&batch).status()));
}

// Overwrites the first image of the first class under `root` with bytes no decoder takes.
void BreakOneImage(const std::string& root) {
  std::vector<std::filesystem::path> classes(std::filesystem::directory_iterator(root), {});
  std::sort(classes.begin(), classes.end());
  std::vector<std::filesystem::path> images(std::filesystem::directory_iterator(classes[0]), {});
  std::sort(images.begin(), images.end());
  std::ofstream(images[0], std::ios::binary | std::ios::trunc) << "not a JPEG";
}

// A skipped bad file leaves the training epoch one image short, which with drop_remainder
// would be one batch short; every rank must take BatchesPerEpoch() steps (each step is a
// collective), so the shard that lost the image repeats its last batch, and the others are as
// before. Evaluation (no drop_remainder) just has one image fewer.
TEST(DatasetSourceTest, ASkippedFileRepeatsTheLastBatchSoEveryRankTakesEveryStep) {
  SampleFolder folder;
  BreakOneImage(folder.train());
  for (int shards : {1, 2}) {
    int64_t skipped = 0;
    for (int shard = 0; shard < shards; ++shard) {
      DatasetSource source(SamplePipeline(folder.train(), 8 / shards, true, shards, shard));
      ASSERT_TRUE(source.Reset(0).ok());
      const std::vector<std::string> epoch = ReadEpoch(source);
      ASSERT_EQ(static_cast<int64_t>(epoch.size()), source.dataset().BatchesPerEpoch());
      EXPECT_EQ(epoch.size(), 5u);  // 40 images (one of them bad) in batches of 8 over the ranks
      const int64_t lost = source.Stats().skipped_files;
      EXPECT_EQ(lost == 1, epoch[3] == epoch[4]) << shards << " shard(s), shard " << shard;
      skipped += lost;
    }
    EXPECT_EQ(skipped, 1) << shards << " shard(s)";
  }
  DatasetSource evaluation(SamplePipeline(folder.train(), 8, /*augment=*/false));
  ASSERT_TRUE(evaluation.Reset(0).ok());
  EXPECT_EQ(ReadEpoch(evaluation).size(), 5u);
  EXPECT_EQ(evaluation.Stats().images, 39);
}

// uint8 batches normalized by the backend (ModelOptions::normalize_images, as lockstep-train
// feeds a GPU) train and evaluate bit for bit as float32 batches normalized by the pipeline.
TEST(DatasetSourceTest, ImagesNormalizedByTheBackendTrainBitForBitAsByThePipeline) {
  SampleFolder folder;
  Model on_host = testing::TinyModel({.seed = 3});
  Model on_device =
      testing::TinyModel({.seed = 3, .normalize_images = testing::kSampleNormalization});
  DatasetSource floats(SamplePipeline(folder.train(), 4, /*augment=*/true));
  DatasetSource pixels(SamplePipeline(folder.train(), 4, true, 1, 0, /*normalized=*/false));
  ASSERT_TRUE(on_host.Train(2, floats).ok());
  absl::Status trained = on_device.Train(2, pixels);
  ASSERT_TRUE(trained.ok()) << trained;
  EXPECT_TRUE(testing::VariableBytes(on_host) == testing::VariableBytes(on_device));
  DatasetSource float_val(SamplePipeline(folder.val(), 8, /*augment=*/false));
  DatasetSource pixel_val(SamplePipeline(folder.val(), 8, false, 1, 0, /*normalized=*/false));
  absl::StatusOr<EvalResult> host_eval = on_host.Eval(float_val);
  absl::StatusOr<EvalResult> device_eval = on_device.Eval(pixel_val);
  ASSERT_TRUE(host_eval.ok() && device_eval.ok());
  EXPECT_EQ(host_eval->loss, device_eval->loss);
  EXPECT_EQ(host_eval->correct, device_eval->correct);

  // A float32 batch given to the uint8 model is refused, naming what it takes.
  Batch wrong;
  ASSERT_TRUE(floats.Reset(0).ok());
  ASSERT_TRUE(floats.Next(&wrong).value_or(false));
  absl::StatusOr<double> refused = on_device.TrainStep(wrong);
  EXPECT_TRUE(absl::IsInvalidArgument(refused.status())) << refused.status();
  EXPECT_NE(refused.status().message().find("batch images must be u8 (N, 16, 16, 3), got f32"),
            std::string::npos)
      << refused.status();
}

// Three ranks' validation shards (no padding) score exactly what one process scores.
TEST(DatasetSourceTest, UnpaddedShardsEvaluateEveryImageOnce) {
  SampleFolder folder;
  Model model(testing::TinyNet(testing::kSampleClasses), SoftmaxCrossEntropy(), Momentum{},
              {.batch_size = 4, .image_shape = {3, 16, 16}});
  DatasetSource whole(SamplePipeline(folder.val(), 8, /*augment=*/false));
  absl::StatusOr<EvalResult> expected = model.Eval(whole);
  ASSERT_TRUE(expected.ok()) << expected.status();
  ASSERT_EQ(expected->samples, 20);
  EvalResult sum;
  double loss_sum = 0.0;
  for (int shard = 0; shard < 3; ++shard) {
    DatasetSource part(SamplePipeline(folder.val(), 8, /*augment=*/false, 3, shard));
    absl::StatusOr<EvalResult> result = model.Eval(part);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->samples, shard < 2 ? 7 : 6);
    sum.samples += result->samples;
    sum.correct += result->correct;
    loss_sum += result->loss * static_cast<double>(result->samples);
  }
  EXPECT_EQ(sum.samples, expected->samples);
  EXPECT_EQ(sum.correct, expected->correct);
  EXPECT_NEAR(loss_sum / 20.0, expected->loss, 1e-5);
}

}  // namespace
}  // namespace lockstep::train
