#include "dataset/sample_dataset.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "dataset/image_folder.h"
#include "tests/dataset/test_util.h"

namespace lockstep::dataset {
namespace {

using testing::ReadBytes;
using testing::TempDir;

TEST(DatasetSampleTest, WritesAnImageFolderDeterministically) {
  TempDir dir;
  SampleDatasetOptions options{
      .seed = 4, .train_per_class = 2, .val_per_class = 1, .height = 32, .width = 40};
  ASSERT_TRUE(WriteSampleDataset(dir.Join("a"), options).ok());
  ASSERT_TRUE(WriteSampleDataset(dir.Join("b"), options).ok());
  options.seed = 5;
  ASSERT_TRUE(WriteSampleDataset(dir.Join("c"), options).ok());

  absl::StatusOr<std::shared_ptr<ImageFolderSource>> train =
      ImageFolderSource::Open(dir.Join("a/train"), {});
  ASSERT_TRUE(train.ok()) << train.status();
  EXPECT_EQ((*train)->size(), 20);
  EXPECT_EQ((*train)->class_names(), SampleClassNames());
  absl::StatusOr<std::shared_ptr<ImageFolderSource>> val =
      ImageFolderSource::Open(dir.Join("a/val"), {});
  ASSERT_TRUE(val.ok());
  EXPECT_EQ((*val)->size(), 10);

  std::string file = "train/zigzag/zigzag_00001.jpg";
  EXPECT_EQ(ReadBytes(dir.Join("a/" + file)), ReadBytes(dir.Join("b/" + file)));
  EXPECT_NE(ReadBytes(dir.Join("a/" + file)), ReadBytes(dir.Join("c/" + file)));
}

TEST(DatasetSampleTest, ImagesVaryWithinAndAcrossClasses) {
  Tensor a = RenderSampleImage(0, 1, 0, 50, 60);
  ASSERT_EQ(a.shape(), (Shape{50, 60, 3}));
  auto same = [](const Tensor& x, const Tensor& y) {
    return std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()) == 0;
  };
  EXPECT_TRUE(same(a, RenderSampleImage(0, 1, 0, 50, 60)));
  EXPECT_FALSE(same(a, RenderSampleImage(0, 1, 1, 50, 60)));
  EXPECT_FALSE(same(a, RenderSampleImage(1, 1, 0, 50, 60)));
  EXPECT_FALSE(WriteSampleDataset("/tmp", {.height = 2}).ok());
}

}  // namespace
}  // namespace lockstep::dataset
