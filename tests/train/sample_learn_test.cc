// The built-in sample dataset is learnable (issue 4): a small ResNet trained through the JPEG
// pipeline with lockstep-train's transforms reaches >= 90% validation accuracy. A test-sized run
// (half the training images, 100x100 JPEGs as the default writes them, one thread, ~20 s); the
// full-size measurement is in BENCHMARKS.md.

#include <gtest/gtest.h>

#include "dataset/image_folder.h"
#include "dataset/sample_dataset.h"
#include "tests/testing/temp_dir.h"
#include "train/dataset_source.h"
#include "train/model.h"
#include "train/models.h"

namespace lockstep::train {
namespace {

constexpr int64_t kEpochs = 10;
constexpr int64_t kBatch = 32;
constexpr int64_t kSize = 32;

DatasetSource Pipeline(const std::string& root, bool training) {
  absl::StatusOr<dataset::Dataset> folder =
      dataset::ImageFolder(root, {.shuffle = training, .seed = 1});
  LS_CHECK(folder.ok()) << folder.status();
  return DatasetSource(folder->Map(ClassificationTransforms(kSize, training))
                           .Batch(kBatch, /*drop_remainder=*/training)
                           .Workers(1));
}

TEST(SampleLearnTest, ResNet8ReachesNinetyPercentOnTheSampleDataset) {
  lockstep::testing::TempDir dir;
  ASSERT_TRUE(dataset::WriteSampleDataset(dir.path(),
                                          {.seed = 3, .train_per_class = 150, .val_per_class = 20})
                  .ok());
  DatasetSource train = Pipeline(dir.Join("train"), /*training=*/true);
  DatasetSource val = Pipeline(dir.Join("val"), /*training=*/false);
  const int64_t steps = kEpochs * train.dataset().BatchesPerEpoch();
  const int64_t warmup = train.dataset().BatchesPerEpoch();
  Model model(models::CifarResNet(8, 10), SoftmaxCrossEntropy(),
              Momentum{.lr = WarmupLr(warmup, CosineLr(0.1, steps - warmup)),
                       .momentum = 0.9,
                       .weight_decay = 1e-4},
              {.batch_size = kBatch, .image_shape = {3, kSize, kSize}});
  ASSERT_TRUE(model.Train(kEpochs, train).ok());
  absl::StatusOr<EvalResult> result = model.Eval(val);
  ASSERT_TRUE(result.ok()) << result.status();
  std::cout << "validation accuracy " << result->accuracy << ", loss " << result->loss << "\n";
  EXPECT_EQ(result->samples, 200);
  EXPECT_GE(result->accuracy, 0.9);
}

}  // namespace
}  // namespace lockstep::train
