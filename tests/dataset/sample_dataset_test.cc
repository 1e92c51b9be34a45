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

// Refusals come before anything is created; a data set is never written over another.
TEST(DatasetSampleTest, RefusedSizesAndExistingSplitsLeaveNoFolder) {
  TempDir dir;
  const std::string out = dir.Join("new/data");
  absl::Status huge = WriteSampleDataset(out, {.height = 1000000, .width = 1000000});
  EXPECT_TRUE(absl::IsResourceExhausted(huge)) << huge;
  EXPECT_NE(huge.message().find("--height 1000000 --width 1000000: drawing one image needs "
                                "24000000000000 bytes"),
            std::string_view::npos)
      << huge;
  absl::Status many = WriteSampleDataset(out, {.train_per_class = 2000000000});
  EXPECT_NE(many.message().find("--train-per-class 2000000000 --val-per-class 60: 20000000600 "
                                "images of about"),
            std::string_view::npos)
      << many;
  EXPECT_FALSE(std::filesystem::exists(dir.Join("new")));

  const SampleDatasetOptions small{
      .train_per_class = 1, .val_per_class = 1, .height = 8, .width = 8};
  ASSERT_TRUE(WriteSampleDataset(out, small).ok());
  absl::Status again = WriteSampleDataset(out, small);
  EXPECT_NE(again.message().find(out + "/train' exists"), std::string_view::npos) << again;
  // Nothing beside the data set: the folder it was written in has been moved into place.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.Join("new")), {}), 1);
}

}  // namespace
}  // namespace lockstep::dataset
