#include "core/file_io.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/testing/temp_dir.h"

namespace lockstep {
namespace {

using testing::TempDir;

TEST(FileIoTest, AnAtomicWriteShowsOnlyWhenCommitted) {
  TempDir dir;
  const std::string path = dir.Join("a.bin");
  {
    absl::StatusOr<AtomicFile> file = AtomicFile::Create(path);
    ASSERT_TRUE(file.ok()) << file.status();
    ASSERT_TRUE(file->Write("never committed").ok());
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp")) << "an uncommitted tmp file is removed";

  ASSERT_TRUE(WriteFileAtomically(path, "first").ok());
  ASSERT_TRUE(WriteFileAtomically(path, "second").ok());
  EXPECT_EQ(*ReadWholeFile(path), "second");
  EXPECT_EQ(*ListFiles(dir.path()), std::vector<std::string>{"a.bin"});
}

TEST(FileIoTest, AppendsKeepWhatTheFileHeld) {
  TempDir dir;
  const std::string path = JoinPath(dir.path(), "log.txt");
  for (const char* line : {"one\n", "two\n"}) {
    absl::StatusOr<AppendOnlyFile> file = AppendOnlyFile::Open(path);
    ASSERT_TRUE(file.ok()) << file.status();
    ASSERT_TRUE(file->Append(line).ok());
  }
  EXPECT_EQ(*ReadWholeFile(path), "one\ntwo\n");

  ASSERT_TRUE(WriteFile(path, "three").ok());
  EXPECT_EQ(*ReadWholeFile(path), "three") << "WriteFile replaces what was there";
}

TEST(FileIoTest, WholeReadsGiveTheBytesOrNameTheFile) {
  TempDir dir;
  const std::string path = dir.Join("bytes");
  ASSERT_TRUE(WriteFile(path, std::string("\x01\x02\xff", 3)).ok());
  absl::StatusOr<Tensor> bytes = ReadWholeFileAsTensor(path);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  ASSERT_EQ(bytes->numel(), 3);
  EXPECT_EQ(bytes->dtype(), DType::kU8);
  EXPECT_EQ(bytes->data<uint8_t>()[2], 0xff);

  const std::string missing = dir.Join("missing");
  absl::Status status = ReadWholeFile(missing).status();
  EXPECT_TRUE(absl::IsNotFound(status)) << status;
  EXPECT_NE(status.message().find(missing), std::string::npos) << status;
  EXPECT_TRUE(RemoveFile(missing).ok()) << "a file already gone is not an error";
}

TEST(FileIoTest, ListingsHoldRegularVisibleFilesSorted) {
  TempDir dir;
  ASSERT_TRUE(MakeDirectories(dir.Join("sub/deeper")).ok());
  for (const char* name : {"b", "a", ".lock"}) ASSERT_TRUE(WriteFile(dir.Join(name), "").ok());
  EXPECT_EQ(*ListFiles(dir.path()), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(absl::IsNotFound(ListFiles(dir.Join("missing")).status()));
  EXPECT_EQ(JoinPath("", "x"), "x");
  EXPECT_EQ(JoinPath("d/", "x"), "d/x");
}

}  // namespace
}  // namespace lockstep
