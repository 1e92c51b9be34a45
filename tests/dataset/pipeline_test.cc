#include "dataset/pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <numeric>

#include "dataset/dataset.h"
#include "dataset/image_folder.h"
#include "dataset/transforms.h"
#include "tests/dataset/test_util.h"

namespace lockstep::dataset {
namespace {

using testing::IndexImages;
using testing::TempDir;
using testing::VectorSource;

Dataset IndexDataset(int n, ShardOptions shard = {.shuffle = false}) {
  std::vector<int32_t> labels(n);
  std::iota(labels.begin(), labels.end(), 0);
  return Dataset(std::make_shared<VectorSource>(IndexImages(n), labels), shard);
}

std::vector<Minibatch> ReadAll(const Dataset& dataset) {
  absl::StatusOr<std::unique_ptr<Iterator>> iterator = dataset.MakeIterator();
  EXPECT_TRUE(iterator.ok()) << iterator.status();
  std::vector<Minibatch> batches;
  if (!iterator.ok()) return batches;
  Minibatch batch;
  while (true) {
    absl::StatusOr<bool> got = (*iterator)->Next(&batch);
    EXPECT_TRUE(got.ok()) << got.status();
    if (!got.ok() || !*got) return batches;
    batches.push_back(batch);
  }
}

std::vector<int> Labels(const std::vector<Minibatch>& batches) {
  std::vector<int> labels;
  for (const Minibatch& batch : batches) {
    for (int64_t i = 0; i < batch.labels.numel(); ++i)
      labels.push_back(batch.labels.data<int32_t>()[i]);
  }
  return labels;
}

bool SameBytes(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

TEST(DatasetPipelineTest, OneAndFourWorkersProduceIdenticalBatches) {
  TempDir dir;
  testing::MakeImageFolder(dir.path(), 4, 10, 24);
  absl::StatusOr<Dataset> images =
      ImageFolder(dir.path(), {.num_shards = 2, .shard_id = 1, .seed = 5});
  ASSERT_TRUE(images.ok()) << images.status();
  Dataset dataset = images
                        ->Map({Decode(), RandomResizedCrop(16), RandomHorizontalFlip(),
                               RandomCrop(16, 2), Normalize({127.5f}, {127.5f}), HWC2CHW()})
                        .Batch(6)
                        .Repeat(2);
  std::vector<Minibatch> one = ReadAll(dataset.Workers(1));
  std::vector<Minibatch> four = ReadAll(dataset.Workers(4).Prefetch(1));
  ASSERT_EQ(one.size(), 8u);  // 20 samples per epoch: 6, 6, 6, 2, twice
  ASSERT_EQ(four.size(), one.size());
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_TRUE(SameBytes(one[i].images, four[i].images)) << "batch " << i;
    EXPECT_TRUE(SameBytes(one[i].labels, four[i].labels)) << "batch " << i;
    EXPECT_EQ(one[i].epoch, four[i].epoch);
  }
  EXPECT_EQ(one[0].images.shape(), (Shape{6, 3, 16, 16}));
  EXPECT_EQ(one[0].images.dtype(), DType::kF32);
  EXPECT_EQ(one[0].labels.dtype(), DType::kI32);
  EXPECT_EQ(one[3].images.dim(0), 2);
  EXPECT_EQ(one[4].epoch, 1);
  // A new epoch reads a new order.
  EXPECT_FALSE(SameBytes(one[0].labels, one[4].labels) && SameBytes(one[1].labels, one[5].labels));
}

TEST(DatasetPipelineTest, BatchesNeverSpanEpochsAndDropRemainderDrops) {
  Dataset dataset = IndexDataset(10);
  std::vector<Minibatch> kept = ReadAll(dataset.Batch(4).Repeat(3));
  ASSERT_EQ(kept.size(), 9u);
  EXPECT_EQ(kept[2].images.dim(0), 2);
  EXPECT_EQ(kept[3].epoch, 1);
  EXPECT_EQ(kept[3].labels.data<int32_t>()[0], 0);
  std::vector<Minibatch> dropped = ReadAll(dataset.Batch(4, true).Repeat(3));
  ASSERT_EQ(dropped.size(), 6u);
  EXPECT_EQ(dataset.Batch(4, true).BatchesPerEpoch(), 2);
  EXPECT_EQ(dataset.Batch(4).BatchesPerEpoch(), 3);
  EXPECT_EQ(Labels(ReadAll(dataset.Batch(3))), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(DatasetPipelineTest, ShuffleBufferReordersInMemorySamplesReproducibly) {
  Dataset shuffled = IndexDataset(30).Shuffle(8).Batch(5);
  std::vector<int> order = Labels(ReadAll(shuffled));
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> identity(30);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_EQ(sorted, identity);
  EXPECT_NE(order, identity);
  EXPECT_EQ(Labels(ReadAll(shuffled.Workers(3))), order);
}

TEST(DatasetPipelineTest, StartsAtAGivenEpochAndCountsImages) {
  Dataset dataset = IndexDataset(10, {.seed = 3}).Batch(5);
  absl::StatusOr<std::unique_ptr<Iterator>> resumed = dataset.MakeIterator(/*first_epoch=*/3);
  ASSERT_TRUE(resumed.ok());
  Minibatch batch;
  ASSERT_TRUE(*(*resumed)->Next(&batch));
  EXPECT_EQ(batch.epoch, 3);
  std::vector<Minibatch> epoch3 = ReadAll(dataset.Repeat(4));
  EXPECT_TRUE(SameBytes(batch.labels, epoch3[6].labels));
  PipelineStats stats = (*resumed)->Stats();
  EXPECT_EQ(stats.images, 5);
  EXPECT_EQ(stats.skipped_files, 0);
  EXPECT_GE(stats.queue_depth, 0);
  EXPECT_GT(stats.images_per_second, 0);
}

TEST(DatasetPipelineTest, BatchAllocatorIsUsedForImagesAndLabels) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  Dataset dataset = IndexDataset(6).Batch(3).AllocateWith([calls](const Shape& shape, DType dtype) {
    calls->fetch_add(1);
    return Tensor::Empty(shape, dtype);
  });
  EXPECT_EQ(ReadAll(dataset).size(), 2u);
  EXPECT_EQ(calls->load(), 4);
}

TEST(DatasetPipelineTest, MisuseAndShapeMismatchAreErrors) {
  Dataset dataset = IndexDataset(4);
  absl::Status map_after_batch = dataset.Batch(2).Map({HWC2CHW()}).MakeIterator().status();
  EXPECT_TRUE(absl::IsFailedPrecondition(map_after_batch)) << map_after_batch;
  EXPECT_FALSE(dataset.Map({RandomCrop(0)}).MakeIterator().ok());
  EXPECT_FALSE(dataset.Batch(0).MakeIterator().ok());

  std::vector<Tensor> images = {Tensor::Zeros({2, 2, 3}, DType::kU8),
                                Tensor::Zeros({3, 3, 3}, DType::kU8)};
  Dataset mixed(std::make_shared<VectorSource>(images, std::vector<int32_t>{0, 1}),
                {.shuffle = false});
  absl::StatusOr<std::unique_ptr<Iterator>> iterator = mixed.Batch(2).MakeIterator();
  ASSERT_TRUE(iterator.ok());
  Minibatch batch;
  absl::Status status = (*iterator)->Next(&batch).status();
  EXPECT_TRUE(absl::IsInvalidArgument(status));
  EXPECT_NE(status.message().find("cannot batch"), std::string_view::npos) << status;
  EXPECT_EQ((*iterator)->Next(&batch).status(), status);  // sticky
}

TEST(DatasetPipelineTest, EndlessRepeatStopsCleanlyAndFailsOnAllBadFiles) {
  {
    absl::StatusOr<std::unique_ptr<Iterator>> forever =
        IndexDataset(10).Batch(2).Repeat().Workers(2).MakeIterator();
    ASSERT_TRUE(forever.ok());
    Minibatch batch;
    for (int i = 0; i < 12; ++i) ASSERT_TRUE(*(*forever)->Next(&batch));
  }  // the destructor stops the workers mid-stream

  TempDir dir;
  testing::WriteBytes(dir.Join("a/bad.jpg"), "not a jpeg");
  absl::StatusOr<Dataset> bad = ImageFolder(dir.path(), {.decode = true});
  ASSERT_TRUE(bad.ok());
  absl::StatusOr<std::unique_ptr<Iterator>> iterator = bad->Repeat().MakeIterator();
  ASSERT_TRUE(iterator.ok());
  Minibatch batch;
  absl::Status status = (*iterator)->Next(&batch).status();
  EXPECT_TRUE(absl::IsDataLoss(status)) << status;
  EXPECT_NE(status.message().find("every sample of epoch 0"), std::string_view::npos) << status;
}

}  // namespace
}  // namespace lockstep::dataset
