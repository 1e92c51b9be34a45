#include "core/paths.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

#include "tests/testing/temp_dir.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

std::string Refusal(const std::string& output, const std::vector<NamedPath>& inputs) {
  return std::string(CheckOutputsAreNotInputs({{"--out", output}}, inputs).message());
}

TEST(PathsTest, AnOutputThatIsAnInputIsRefusedThroughLinksAndDots) {
  TempDir dir;
  const std::string input = dir.Join("in.ckpt");
  std::ofstream(input) << "x";
  fs::create_directory(dir.Join("sub"));
  fs::create_symlink(input, dir.Join("link"));
  fs::create_directory_symlink(dir.path(), dir.Join("sub/up"));
  const std::vector<NamedPath> inputs = {{"the checkpoint", input}};
  EXPECT_EQ(Refusal(input, inputs), absl::StrCat("--out ", input, " is the checkpoint ", input,
                                                 ": an output may not replace an input"));
  EXPECT_NE(Refusal(dir.Join("link"), inputs), "");
  EXPECT_NE(Refusal(dir.Join("sub/../in.ckpt"), inputs), "");
  EXPECT_NE(Refusal(dir.Join("sub/up/in.ckpt"), inputs), "");
  EXPECT_EQ(Refusal(dir.Join("out.onnx"), inputs), "");
  EXPECT_EQ(Refusal("", inputs), "");
}

TEST(PathsTest, AnOutputInsideAnInputTreeIsRefusedOnlyForTrees) {
  TempDir dir;
  fs::create_directories(dir.Join("data/train/a"));
  const std::vector<NamedPath> inputs = {{"--data", dir.Join("data")},
                                         {"train/", dir.Join("data/train"), /*tree=*/true}};
  EXPECT_NE(Refusal(dir.Join("data/train/a/new/ckpt"), inputs).find("lies inside train/"),
            std::string::npos);
  EXPECT_NE(Refusal(dir.Join("data/"), inputs).find("is --data"), std::string::npos);
  EXPECT_EQ(Refusal(dir.Join("data/ckpt"), inputs), "");
  EXPECT_EQ(Refusal(dir.Join("data/trainer"), inputs), "");
}

TEST(PathsTest, OnlyRegularFilesAreOpened) {
  TempDir dir;
  const std::string file = dir.Join("file");
  std::ofstream(file) << "four";
  absl::StatusOr<RegularFile> opened = OpenRegularFile(file);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ(opened->size, 4u);
  close(opened->fd);
  ASSERT_EQ(mkfifo(dir.Join("fifo").c_str(), 0600), 0);
  EXPECT_EQ(
      OpenRegularFile(dir.Join("fifo")).status().message(),
      dir.Join("fifo") + " is a FIFO (named pipe), not a regular file: it cannot be read as one");
  EXPECT_NE(OpenRegularFile(dir.path()).status().message().find("is a directory"),
            std::string::npos);
  EXPECT_NE(OpenRegularFile("/dev/null").status().message().find("is a character device"),
            std::string::npos);
  EXPECT_TRUE(absl::IsNotFound(OpenRegularFile(dir.Join("missing")).status()));
}

// Writers replace regular files only, of their own kind when one is given; a FIFO is refused
// without waiting for a reader.
TEST(PathsTest, OnlyRegularFilesOfTheWritersKindAreReplaced) {
  TempDir dir;
  const std::string file = dir.Join("file");
  std::ofstream(file) << "four";
  EXPECT_TRUE(CheckOutputPath(file).ok());
  EXPECT_TRUE(CheckOutputPath(dir.Join("missing")).ok());
  ASSERT_EQ(mkfifo(dir.Join("fifo").c_str(), 0600), 0);
  ASSERT_EQ(symlink(file.c_str(), dir.Join("link").c_str()), 0);
  const std::vector<std::pair<std::string, std::string>> refused = {
      {dir.Join("fifo"), "a FIFO (named pipe)"},
      {dir.path(), "a directory"},
      {"/dev/null", "a character device"},
      {dir.Join("link"), "a symbolic link"}};
  for (const auto& [path, what] : refused) {
    const std::string message = absl::StrCat("refusing to write ", path, ": it is ", what,
                                             ", not a regular file this program writes");
    EXPECT_EQ(CheckOutputPath(path).message(), message);
    EXPECT_EQ(OpenOutputFile(path, O_CREAT | O_TRUNC).status().message(), message);
  }
  const FileKind fours{"a file of fours", [](const std::string& path) {
                         std::string text;
                         std::ifstream(path) >> text;
                         return text == "four";
                       }};
  EXPECT_TRUE(CheckOutputPath(file, &fours).ok());
  std::ofstream(file) << "five";
  EXPECT_EQ(CheckOutputPath(file, &fours).message(),
            absl::StrCat("refusing to replace ", file,
                         ": it is not a file of fours (another kind of file); choose another path, "
                         "or remove it first"));
  absl::StatusOr<int> fd = OpenOutputFile(dir.Join("new"), O_CREAT | O_TRUNC);
  ASSERT_TRUE(fd.ok()) << fd.status();
  EXPECT_EQ(write(*fd, "x", 1), 1);
  close(*fd);
}

}  // namespace
}  // namespace lockstep
