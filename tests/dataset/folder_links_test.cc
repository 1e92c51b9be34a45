// ImageFolder trees with symbolic links: each directory is entered once, no link carries images
// into another class, and one warning names every link skipped and why (dataset/folder_walk.h).

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <utility>

#include "dataset/image_folder.h"
#include "tests/dataset/test_util.h"

namespace lockstep::dataset {
namespace {

namespace fs = std::filesystem;
using testing::GradientImage;
using testing::TempDir;
using testing::WriteJpeg;

// (path relative to the root, class name) of every sample, in the source's order.
using Samples = std::vector<std::pair<std::string, std::string>>;

struct Opened {
  Samples samples;
  std::vector<std::string> class_names;
  std::string log;  // what the walk wrote to stderr
};

Opened Open(const std::string& root, const ImageFolderOptions& options = {}) {
  ::testing::internal::CaptureStderr();
  absl::StatusOr<std::shared_ptr<ImageFolderSource>> source =
      ImageFolderSource::Open(root, options);
  Opened opened{.log = ::testing::internal::GetCapturedStderr()};
  EXPECT_TRUE(source.ok()) << source.status();
  if (!source.ok()) return opened;
  opened.class_names = (*source)->class_names();
  for (int64_t i = 0; i < (*source)->size(); ++i) {
    opened.samples.emplace_back((*source)->Describe(i).substr(root.size() + 1),
                                opened.class_names[(*source)->label(i)]);
  }
  return opened;
}

// Whether `part` occurs exactly once in `log`.
::testing::AssertionResult OnceIn(const std::string& log, const std::string& part) {
  int count = 0;
  for (size_t at = log.find(part); at != std::string::npos; at = log.find(part, at + 1)) ++count;
  if (count == 1) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << count << " times '" << part << "' in:\n" << log;
}

void Jpeg(const std::string& path) { WriteJpeg(path, GradientImage(8, 8)); }

void Link(const std::string& target, const std::string& link) { fs::create_symlink(target, link); }

// dir/train: dots/{a,b}.jpg and lines/{a.jpg, sub/c.jpg}.
std::string MakeTree(const TempDir& dir) {
  for (const char* file : {"dots/a.jpg", "dots/b.jpg", "lines/a.jpg", "lines/sub/c.jpg"}) {
    Jpeg(dir.Join(std::string("train/") + file));
  }
  return dir.Join("train");
}

const Samples kTree = {{"dots/a.jpg", "dots"},
                       {"dots/b.jpg", "dots"},
                       {"lines/a.jpg", "lines"},
                       {"lines/sub/c.jpg", "lines"}};
const std::vector<std::string> kClasses = {"dots", "lines"};

TEST(DatasetFolderLinksTest, LinkToAParentInsideAClassIsSkipped) {
  TempDir dir;
  const std::string root = MakeTree(dir);
  Link("..", root + "/dots/up");
  Opened opened = Open(root);
  EXPECT_EQ(opened.samples, kTree);
  EXPECT_EQ(opened.class_names, kClasses);
  EXPECT_TRUE(OnceIn(opened.log, "warning: "));
  EXPECT_TRUE(OnceIn(opened.log, "skipped 1 link: " + root + "/dots/up -> .. (an ancestor)"));
}

// The shape that hung: train/zz and val/zz both lead above their roots.
TEST(DatasetFolderLinksTest, LinksToTheRootOrAboveAreNoClassesAndEndQuickly) {
  TempDir dir;
  const std::string root = MakeTree(dir);
  Jpeg(dir.Join("val/dots/v.jpg"));
  Link("..", root + "/zz");
  Link(".", root + "/yy");
  Link("..", dir.Join("val/zz"));
  alarm(10);  // a hang ends the test binary instead of the CI job
  const auto start = std::chrono::steady_clock::now();
  Opened train = Open(root);
  Opened val = Open(dir.Join("val"));
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  alarm(0);
  EXPECT_LT(took.count(), 1.0);
  EXPECT_EQ(train.samples, kTree);
  EXPECT_EQ(train.class_names, kClasses);
  EXPECT_TRUE(OnceIn(train.log, "skipped 2 links: " + root + "/yy -> . (an ancestor), " + root +
                                    "/zz -> .. (an ancestor)"));
  EXPECT_EQ(val.samples, (Samples{{"dots/v.jpg", "dots"}}));
  EXPECT_TRUE(OnceIn(val.log, dir.Join("val/zz") + " -> .. (an ancestor)"));
}

TEST(DatasetFolderLinksTest, SelfLinkIsSkipped) {
  TempDir dir;
  const std::string root = MakeTree(dir);
  Link(".", root + "/dots/self");
  Opened opened = Open(root);
  EXPECT_EQ(opened.samples, kTree);
  EXPECT_TRUE(OnceIn(opened.log, root + "/dots/self -> . (an ancestor)"));
}

// Links inside a class, and at the root, into another class's directories; "aa" sorts before
// "lines", so it would take lines/sub if links were judged before every class is walked.
TEST(DatasetFolderLinksTest, LinksIntoAnotherClassAreSkipped) {
  TempDir dir;
  const std::string root = MakeTree(dir);
  Link("../lines", root + "/dots/other");
  Link("lines/sub", root + "/aa");
  Link("lines", root + "/alias");
  Opened opened = Open(root);
  EXPECT_EQ(opened.samples, kTree);
  EXPECT_EQ(opened.class_names, kClasses);
  EXPECT_TRUE(OnceIn(opened.log, "warning: "));
  for (const char* link : {"/aa -> lines/sub", "/alias -> lines", "/dots/other -> ../lines"}) {
    EXPECT_TRUE(OnceIn(opened.log, root + link + " (a directory of class 'lines')"));
  }
}

// A cycle inside a class two levels deep, and one through two directories outside the tree.
TEST(DatasetFolderLinksTest, LinkCyclesStopAtTheFirstRepeat) {
  TempDir dir;
  const std::string root = MakeTree(dir);
  Jpeg(root + "/dots/a/b/deep.jpg");
  Link("../..", root + "/dots/a/b/loop");
  Jpeg(dir.Join("ext/x/x.jpg"));
  Jpeg(dir.Join("ext/y/y.jpg"));
  Link("../y", dir.Join("ext/x/to_y"));
  Link("../x", dir.Join("ext/y/to_x"));
  Link(dir.Join("ext/x"), root + "/dots/ext");
  Opened opened = Open(root);
  EXPECT_EQ(opened.samples, (Samples{{"dots/a.jpg", "dots"},
                                     {"dots/a/b/deep.jpg", "dots"},
                                     {"dots/b.jpg", "dots"},
                                     {"dots/ext/to_y/y.jpg", "dots"},
                                     {"dots/ext/x.jpg", "dots"},
                                     {"lines/a.jpg", "lines"},
                                     {"lines/sub/c.jpg", "lines"}}));
  EXPECT_TRUE(OnceIn(opened.log, "skipped 2 links: "));
  EXPECT_TRUE(OnceIn(opened.log, root + "/dots/a/b/loop -> ../.. (an ancestor)"));
  EXPECT_TRUE(OnceIn(opened.log, root + "/dots/ext/to_y/to_x -> ../x (an ancestor)"));
}

TEST(DatasetFolderLinksTest, BrokenLinksAreSkipped) {
  TempDir dir;
  const std::string root = MakeTree(dir);
  Link("missing.jpg", root + "/dots/gone.jpg");
  Link("../nowhere", root + "/zz");
  Link("itself.jpg", root + "/lines/itself.jpg");
  Opened opened = Open(root);
  EXPECT_EQ(opened.samples, kTree);
  EXPECT_EQ(opened.class_names, kClasses);
  EXPECT_TRUE(OnceIn(opened.log, root + "/dots/gone.jpg -> missing.jpg (broken: "));
  EXPECT_TRUE(OnceIn(opened.log, root + "/zz -> ../nowhere (broken: "));
  EXPECT_TRUE(OnceIn(opened.log, root + "/lines/itself.jpg -> itself.jpg (broken: "));
  EXPECT_TRUE(OnceIn(opened.log, "skipped 3 links: "));
}

TEST(DatasetFolderLinksTest, LinkedFileIsAnImageOfItsClass) {
  TempDir dir;
  const std::string root = MakeTree(dir);
  Jpeg(dir.Join("outside.jpg"));
  Link("../../outside.jpg", root + "/dots/linked.jpg");
  Opened opened = Open(root);
  Samples expected = kTree;
  expected.insert(expected.begin() + 2, {"dots/linked.jpg", "dots"});
  EXPECT_EQ(opened.samples, expected);
  EXPECT_EQ(opened.log, "");
}

// Links to directories outside the tree are followed (a class kept on another disk), each
// directory once.
TEST(DatasetFolderLinksTest, LinksToNewDirectoriesAreFollowedOnce) {
  TempDir dir;
  const std::string root = MakeTree(dir);
  Jpeg(dir.Join("extra/e.jpg"));
  Jpeg(dir.Join("cats/c.jpg"));
  Link(dir.Join("extra"), root + "/dots/more");
  Link(dir.Join("extra"), root + "/dots/same");
  Link("../cats", root + "/cats");
  Opened opened = Open(root);
  EXPECT_EQ(opened.class_names, (std::vector<std::string>{"cats", "dots", "lines"}));
  Samples expected = {{"cats/c.jpg", "cats"},
                      {"dots/a.jpg", "dots"},
                      {"dots/b.jpg", "dots"},
                      {"dots/more/e.jpg", "dots"}};
  expected.insert(expected.end(), kTree.begin() + 2, kTree.end());
  EXPECT_EQ(opened.samples, expected);
  EXPECT_TRUE(OnceIn(opened.log, "skipped 1 link: " + root + "/dots/same -> " + dir.Join("extra") +
                                     " (a directory already walked)"));
}

TEST(DatasetFolderLinksTest, ClassIndexingRefusesALinkThatCannotBeAClass) {
  TempDir dir;
  const std::string root = MakeTree(dir);
  Link("..", root + "/zz");
  absl::Status status =
      ImageFolderSource::Open(root, {.class_indexing = {{"dots", 0}, {"zz", 1}}}).status();
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
  EXPECT_NE(status.message().find("class folder '" + root +
                                  "/zz' (from class_indexing) leads to an ancestor"),
            std::string::npos)
      << status;
}

}  // namespace
}  // namespace lockstep::dataset
