#include "dataset/mnist.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <set>

#include "tests/dataset/test_util.h"

namespace lockstep::dataset {
namespace {

using testing::TempDir;
using testing::WriteBytes;

// An IDX file of unsigned bytes.
std::vector<uint8_t> Idx(const std::vector<uint32_t>& dims, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> bytes = {0, 0, 0x08, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<uint8_t>(d >> shift));
  }
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

// `count` images of 28x28 whose pixels all equal 10 * i + offset, labelled i % 10.
void WriteMnist(const TempDir& dir, const std::string& prefix, uint32_t count, uint8_t offset) {
  std::vector<uint8_t> pixels, labels;
  for (uint32_t i = 0; i < count; ++i) {
    pixels.insert(pixels.end(), 28 * 28, static_cast<uint8_t>(10 * i + offset));
    labels.push_back(static_cast<uint8_t>(i % 10));
  }
  WriteBytes(dir.Join(prefix + "-images-idx3-ubyte"), Idx({count, 28, 28}, pixels));
  WriteBytes(dir.Join(prefix + "-labels-idx1-ubyte"), Idx({count}, labels));
}

TEST(DatasetMnistTest, ReadsImagesAndLabelsInOrder) {
  TempDir dir;
  WriteMnist(dir, "train", 5, 0);
  absl::StatusOr<Dataset> mnist = Mnist(dir.path(), {.shuffle = false});
  ASSERT_TRUE(mnist.ok()) << mnist.status();
  absl::StatusOr<std::unique_ptr<Iterator>> iterator = mnist->Batch(5).MakeIterator();
  ASSERT_TRUE(iterator.ok());
  Minibatch batch;
  ASSERT_TRUE(*(*iterator)->Next(&batch));
  ASSERT_EQ(batch.images.shape(), (Shape{5, 28, 28, 1}));
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(batch.images.data<uint8_t>()[i * 28 * 28 + 100], 10 * i);
    EXPECT_EQ(batch.labels.data<int32_t>()[i], i);
  }
  EXPECT_FALSE(*(*iterator)->Next(&batch));
}

TEST(DatasetMnistTest, UsageAllAppendsTestAfterTrainAndShardsCover) {
  TempDir dir;
  WriteMnist(dir, "train", 6, 0);
  WriteMnist(dir, "t10k", 4, 1);
  absl::StatusOr<std::shared_ptr<MnistSource>> all = MnistSource::Open(dir.path(), "all");
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ((*all)->size(), 10);
  EXPECT_EQ((*all)->Describe(7), dir.Join("t10k-images-idx3-ubyte") + "[1]");
  EXPECT_EQ(*(*all)->Load(7)->data.data<uint8_t>(), 11);

  std::set<int> seen;
  for (int shard = 0; shard < 3; ++shard) {
    absl::StatusOr<Dataset> part =
        Mnist(dir.path(), {.usage = "all", .num_shards = 3, .shard_id = shard});
    ASSERT_TRUE(part.ok());
    EXPECT_EQ(part->SamplesPerEpoch(), 4);
    absl::StatusOr<std::unique_ptr<Iterator>> iterator = part->Batch(4).MakeIterator();
    Minibatch batch;
    ASSERT_TRUE(*(*iterator)->Next(&batch));
    for (int i = 0; i < 4; ++i) seen.insert(batch.images.data<uint8_t>()[i * 28 * 28]);
  }
  EXPECT_EQ(seen.size(), 10u);
}

TEST(DatasetMnistTest, BadFilesAreErrorsNamingThePath) {
  TempDir dir;
  absl::Status missing = Mnist(dir.path()).status();
  EXPECT_TRUE(absl::IsNotFound(missing)) << missing;
  EXPECT_NE(missing.message().find(dir.Join("train-images-idx3-ubyte")), std::string_view::npos);

  WriteMnist(dir, "train", 3, 0);
  WriteBytes(dir.Join("train-labels-idx1-ubyte"), Idx({2}, {0, 1}));
  absl::Status mismatch = Mnist(dir.path()).status();
  EXPECT_TRUE(absl::IsInvalidArgument(mismatch)) << mismatch;

  WriteBytes(dir.Join("train-images-idx3-ubyte"), "garbage");
  absl::Status garbage = Mnist(dir.path()).status();
  EXPECT_NE(garbage.message().find("not an IDX file"), std::string_view::npos) << garbage;
  EXPECT_FALSE(Mnist(dir.path(), {.usage = "validation"}).ok());
}

// Claims a file cannot back: dims whose product passes 2^64, a sparse file of 2^40 bytes (as
// big as it claims, but more than memory), a FIFO (opening it would wait for a writer forever).
TEST(DatasetMnistTest, HeaderClaimsAndFilesThatAreNotRegularAreRefused) {
  TempDir dir;
  WriteMnist(dir, "train", 3, 0);
  const std::string images = dir.Join("train-images-idx3-ubyte");
  WriteBytes(images, Idx({0xffffffff, 0xffffffff, 0xffffffff}, {1, 2, 3}));
  absl::Status overflow = Mnist(dir.path()).status();
  EXPECT_NE(overflow.message().find("its header promises over 2^64"), std::string_view::npos)
      << overflow;

  std::filesystem::resize_file(images, uint64_t{1} << 40);
  absl::Status sparse = Mnist(dir.path()).status();
  EXPECT_TRUE(absl::IsResourceExhausted(sparse)) << sparse;
  EXPECT_NE(sparse.message().find(images + "' needs 1099511627776 bytes"), std::string_view::npos)
      << sparse;

  std::filesystem::remove(images);
  ASSERT_EQ(mkfifo(images.c_str(), 0600), 0);
  absl::Status fifo = Mnist(dir.path()).status();
  EXPECT_NE(fifo.message().find(images + " is a FIFO (named pipe), not a regular file"),
            std::string_view::npos)
      << fifo;
}

}  // namespace
}  // namespace lockstep::dataset
