#include "dataset/image_folder.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "dataset/encode.h"
#include "dataset/transforms.h"
#include "tests/dataset/test_util.h"

namespace lockstep::dataset {
namespace {

using testing::GradientImage;
using testing::MakeImageFolder;
using testing::TempDir;
using testing::WriteBytes;
using testing::WriteJpeg;

bool Mentions(const absl::Status& status, const std::string& text) {
  return status.message().find(text) != std::string_view::npos;
}

// Reads every batch of one epoch; returns the first error.
absl::StatusOr<std::vector<Minibatch>> ReadAll(const Dataset& dataset) {
  LS_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> iterator, dataset.MakeIterator());
  std::vector<Minibatch> batches;
  Minibatch batch;
  while (true) {
    LS_ASSIGN_OR_RETURN(bool got, iterator->Next(&batch));
    if (!got) return batches;
    batches.push_back(batch);
  }
}

TEST(DatasetImageFolderTest, ClassesAreSortedFoldersAndSamplesSortedPaths) {
  TempDir dir;
  Tensor image = GradientImage(8, 8);
  WriteJpeg(dir.Join("b/2.jpg"), image);
  WriteJpeg(dir.Join("b/1.jpeg"), image);
  WriteBytes(dir.Join("a/x.png"), *EncodePng(image));
  WriteJpeg(dir.Join("c/sub/y.JPG"), image);
  WriteBytes(dir.Join("c/readme.txt"), "not listed");
  WriteJpeg(dir.Join(".hidden/z.jpg"), image);

  absl::StatusOr<std::shared_ptr<ImageFolderSource>> source =
      ImageFolderSource::Open(dir.path(), {});
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_EQ((*source)->class_names(), (std::vector<std::string>{"a", "b", "c"}));
  ASSERT_EQ((*source)->size(), 4);
  EXPECT_EQ((*source)->Describe(0), dir.Join("a/x.png"));
  EXPECT_EQ((*source)->Describe(1), dir.Join("b/1.jpeg"));
  EXPECT_EQ((*source)->Describe(2), dir.Join("b/2.jpg"));
  EXPECT_EQ((*source)->Describe(3), dir.Join("c/sub/y.JPG"));
  EXPECT_EQ((*source)->label(0), 0);
  EXPECT_EQ((*source)->label(2), 1);
  EXPECT_EQ((*source)->label(3), 2);
}

// The files of a source, by path.
std::set<std::string> Paths(const ImageFolderSource& source) {
  std::set<std::string> paths;
  for (int64_t i = 0; i < source.size(); ++i) paths.insert(source.Describe(i));
  return paths;
}

TEST(DatasetImageFolderTest, HoldOutSplitsEveryClassTheSameWayEachTime) {
  TempDir dir;
  MakeImageFolder(dir.path(), 3, 10, 8);
  auto side = [&](double fraction, bool held_out, uint64_t seed) {
    absl::StatusOr<std::shared_ptr<ImageFolderSource>> source = ImageFolderSource::Open(
        dir.path(), {.hold_out = {.fraction = fraction, .read_held_out = held_out, .seed = seed}});
    EXPECT_TRUE(source.ok()) << source.status();
    return source.ok() ? *source : nullptr;
  };
  std::shared_ptr<ImageFolderSource> train = side(0.2, false, 7);
  std::shared_ptr<ImageFolderSource> held = side(0.2, true, 7);
  ASSERT_TRUE(train && held);
  ASSERT_EQ(train->size(), 24);
  ASSERT_EQ(held->size(), 6);
  std::vector<int> held_per_class(3, 0);
  for (int64_t i = 0; i < held->size(); ++i) ++held_per_class[held->label(i)];
  EXPECT_EQ(held_per_class, (std::vector<int>{2, 2, 2}));
  std::set<std::string> all = Paths(*train), held_paths = Paths(*held);
  all.insert(held_paths.begin(), held_paths.end());
  EXPECT_EQ(all.size(), 30u);  // disjoint, and together every file
  EXPECT_EQ(Paths(*side(0.2, true, 7)), held_paths);
  EXPECT_NE(Paths(*side(0.2, true, 8)), held_paths);
  // Each class keeps at least one file on each side.
  EXPECT_EQ(side(0.01, true, 7)->size(), 3);
  EXPECT_EQ(side(0.99, false, 7)->size(), 3);
}

TEST(DatasetImageFolderTest, HoldOutNeedsAShareAndTwoFilesPerClass) {
  TempDir dir;
  MakeImageFolder(dir.path(), 2, 1, 8);
  EXPECT_TRUE(Mentions(
      ImageFolderSource::Open(dir.path(), {.hold_out = {.fraction = 0.1}}).status(),
      "class_0' has 1 image file(s): holding out a share for validation needs at least 2"));
  EXPECT_TRUE(
      Mentions(ImageFolderSource::Open(dir.path(), {.hold_out = {.fraction = 1.0}}).status(),
               "held out for validation must be in [0, 1), got 1"));
}

TEST(DatasetImageFolderTest, ClassIndexingPicksFoldersAndLabels) {
  TempDir dir;
  MakeImageFolder(dir.path(), 3, 2);
  absl::StatusOr<std::shared_ptr<ImageFolderSource>> source =
      ImageFolderSource::Open(dir.path(), {.class_indexing = {{"class_2", 0}, {"class_0", 5}}});
  ASSERT_TRUE(source.ok()) << source.status();
  ASSERT_EQ((*source)->size(), 4);
  EXPECT_EQ((*source)->label(0), 5);  // class_0 sorts first
  EXPECT_EQ((*source)->label(3), 0);
  EXPECT_EQ((*source)->class_names()[5], "class_0");

  absl::Status missing = ImageFolder(dir.path(), {.class_indexing = {{"nope", 0}}}).status();
  EXPECT_TRUE(absl::IsNotFound(missing));
  EXPECT_TRUE(Mentions(missing, dir.Join("nope"))) << missing;
}

TEST(DatasetImageFolderTest, BadRootsAndEmptyClassesNameThePath) {
  TempDir dir;
  absl::Status missing = ImageFolder(dir.Join("absent")).status();
  EXPECT_TRUE(absl::IsNotFound(missing));
  EXPECT_TRUE(Mentions(missing, dir.Join("absent"))) << missing;

  absl::Status no_classes = ImageFolder(dir.path()).status();
  EXPECT_FALSE(no_classes.ok());
  EXPECT_TRUE(Mentions(no_classes, "no class sub-directories")) << no_classes;

  WriteBytes(dir.Join("file"), "x");
  EXPECT_FALSE(ImageFolder(dir.Join("file")).ok());

  std::filesystem::create_directories(dir.Join("cats"));
  WriteBytes(dir.Join("cats/notes.txt"), "x");
  absl::Status empty = ImageFolder(dir.path()).status();
  EXPECT_TRUE(Mentions(empty, dir.Join("cats"))) << empty;
  EXPECT_TRUE(Mentions(empty, "no image files")) << empty;

  EXPECT_FALSE(ImageFolder(dir.path(), {.num_shards = 2, .shard_id = 2}).ok());
}

// A class folder with good images and every kind of bad file the pipeline must survive.
void MakeFolderWithBadFiles(const TempDir& dir) {
  MakeImageFolder(dir.path(), 2, 3);
  std::vector<uint8_t> jpeg = testing::ReadBytes(dir.Join("class_0/img_0.jpg"));
  WriteBytes(dir.Join("class_1/truncated.jpg"),
             std::vector<uint8_t>(jpeg.begin(), jpeg.begin() + jpeg.size() / 2));
  std::vector<uint8_t> corrupt = jpeg;
  for (size_t i = 3; i < 40; ++i) corrupt[i] = static_cast<uint8_t>(i * 37);
  WriteBytes(dir.Join("class_1/corrupt.jpg"), corrupt);
  WriteBytes(dir.Join("class_1/empty.jpg"), "");
  WriteBytes(dir.Join("class_1/text.jpg"), "just some text, not a JPEG\n");
}

TEST(DatasetImageFolderTest, BadFilesAreSkippedAndCounted) {
  TempDir dir;
  MakeFolderWithBadFiles(dir);
  absl::StatusOr<Dataset> dataset = ImageFolder(dir.path(), {.decode = true});
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  absl::StatusOr<std::unique_ptr<Iterator>> iterator = dataset->Batch(2).MakeIterator();
  ASSERT_TRUE(iterator.ok());
  int64_t images = 0;
  Minibatch batch;
  while (true) {
    absl::StatusOr<bool> got = (*iterator)->Next(&batch);
    ASSERT_TRUE(got.ok()) << got.status();
    if (!*got) break;
    images += batch.images.dim(0);
  }
  EXPECT_EQ(images, 6);
  EXPECT_EQ((*iterator)->Stats().skipped_files, 4);
  EXPECT_EQ((*iterator)->Stats().images, 6);
}

TEST(DatasetImageFolderTest, BadFilesAreFatalWithTheirPathUnderErrorPolicy) {
  TempDir dir;
  MakeFolderWithBadFiles(dir);
  absl::StatusOr<Dataset> dataset = ImageFolder(
      dir.path(), {.shuffle = false, .decode = true, .on_bad_file = BadFilePolicy::kError});
  ASSERT_TRUE(dataset.ok());
  absl::Status status = ReadAll(*dataset).status();
  EXPECT_TRUE(absl::IsDataLoss(status)) << status;
  // Sorted by path, the first bad file is corrupt.jpg.
  EXPECT_TRUE(Mentions(status, dir.Join("class_1/corrupt.jpg"))) << status;
}

// A file that vanishes (or cannot be read) after the folder was listed is a bad image file, as
// an undecodable one is: skipped and counted by default, an error naming it with kError.
TEST(DatasetImageFolderTest, AFileThatVanishedIsABadFileAsThePolicySays) {
  TempDir dir;
  MakeImageFolder(dir.path(), 2, 2);
  absl::StatusOr<Dataset> skipping = ImageFolder(dir.path(), {.decode = true});
  absl::StatusOr<Dataset> failing =
      ImageFolder(dir.path(), {.decode = true, .on_bad_file = BadFilePolicy::kError});
  ASSERT_TRUE(skipping.ok() && failing.ok());
  std::filesystem::remove(dir.Join("class_1/img_0.jpg"));
  absl::StatusOr<std::unique_ptr<Iterator>> iterator = skipping->Batch(1).MakeIterator();
  ASSERT_TRUE(iterator.ok());
  Minibatch batch;
  int64_t images = 0;
  while (true) {
    absl::StatusOr<bool> got = (*iterator)->Next(&batch);
    ASSERT_TRUE(got.ok()) << got.status();
    if (!*got) break;
    ++images;
  }
  EXPECT_EQ(images, 3);
  EXPECT_EQ((*iterator)->Stats().skipped_files, 1);
  absl::Status status = ReadAll(*failing).status();
  EXPECT_TRUE(absl::IsDataLoss(status)) << status;
  EXPECT_TRUE(Mentions(status, dir.Join("class_1/img_0.jpg"))) << status;
}

}  // namespace
}  // namespace lockstep::dataset
