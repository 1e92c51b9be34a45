// Corrupt files: truncations at random offsets, flipped bytes, empty files, files that are not
// checkpoints, and lengths or shapes that claim more than the file holds. Every one must give a
// clear error, never a crash, and never an allocation larger than the file (this binary links
// allocation_tracker.cc, which measures the largest single allocation).

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "ckpt/reader.h"
#include "ckpt/writer.h"
#include "core/file_io.h"
#include "core/rng.h"
#include "tests/ckpt/allocation_tracker.h"
#include "tests/ckpt/test_util.h"

namespace lockstep::ckpt {
namespace {

using testing::PatternTensor;
using testing::ReadBytes;
using testing::TempDir;
using testing::WriteBytes;

// Room for the reader's fixed buffers (protobuf's 8 KiB file stream buffer, messages).
constexpr size_t kFixedBuffers = 16 << 10;

struct ReadResult {
  absl::StatusOr<CheckpointData> data;
  size_t largest_allocation;
};

ReadResult Read(const std::string& path, const ReadOptions& options = {}) {
  testing::ResetLargestAllocation();
  absl::StatusOr<CheckpointData> data = ReadCheckpoint(path, options);
  return {std::move(data), testing::LargestAllocation()};
}

// A ~40 KB checkpoint with sliced and unsliced tensors of several types.
std::string WriteSample(const TempDir& dir) {
  const std::string path = dir.Join("sample.ckpt");
  absl::StatusOr<CheckpointWriter> writer = CheckpointWriter::Open(path, {.slice_bytes = 4096});
  EXPECT_TRUE(writer.ok());
  EXPECT_TRUE(writer->Add("conv.weight", PatternTensor({16, 3, 3, 3}, DType::kF32, 1)).ok());
  EXPECT_TRUE(writer->Add("fc.weight", PatternTensor({40, 200}, DType::kF32, 2)).ok());
  EXPECT_TRUE(writer->Add("fc.bias", PatternTensor({200}, DType::kF16, 3)).ok());
  EXPECT_TRUE(writer->Add("moments.fc.weight", PatternTensor({40, 50}, DType::kF64, 4)).ok());
  EXPECT_TRUE(writer->AddInt64("epoch_num", 3).ok());
  EXPECT_TRUE(writer->AddInt64("step_num", 300).ok());
  EXPECT_TRUE(writer->Finish().ok());
  return path;
}

void ExpectClearError(const ReadResult& result, const std::string& path, size_t file_bytes) {
  ASSERT_FALSE(result.data.ok()) << path;
  EXPECT_EQ(result.data.status().code(), absl::StatusCode::kDataLoss) << result.data.status();
  EXPECT_NE(result.data.status().message().find(path), std::string::npos) << result.data.status();
  EXPECT_LE(result.largest_allocation, std::max(file_bytes, kFixedBuffers));
}

TEST(CkptRobustnessTest, TruncatedAtFiftyRandomOffsets) {
  TempDir dir;
  const std::string original = ReadBytes(WriteSample(dir));
  absl::StatusOr<CheckpointData> whole = ReadCheckpoint(dir.Join("sample.ckpt"));
  ASSERT_TRUE(whole.ok());
  const Philox rng(/*seed=*/20240611, /*stream=*/0);
  const std::string path = dir.Join("truncated.ckpt");
  for (uint64_t i = 0; i < 50; ++i) {
    const size_t size = rng.UniformInt(i, original.size());
    SCOPED_TRACE(absl::StrCat("truncated to ", size, " of ", original.size(), " bytes"));
    WriteBytes(path, std::string_view(original).substr(0, size));
    ExpectClearError(Read(path), path, size);
    // Without a required trailer a cut at a Value boundary reads as a shorter checkpoint: then
    // it must hold whole tensors, equal to the original's first ones.
    ReadResult lenient = Read(path, {.require_crc = false, .fail_on_crc_mismatch = false});
    EXPECT_LE(lenient.largest_allocation, std::max(size, kFixedBuffers));
    if (!lenient.data.ok()) continue;
    ASSERT_LE(lenient.data->entries.size(), whole->entries.size());
    for (size_t e = 0; e < lenient.data->entries.size(); ++e) {
      EXPECT_EQ(lenient.data->entries[e].name, whole->entries[e].name);
      EXPECT_EQ(lenient.data->entries[e].content, whole->entries[e].content);
    }
  }
}

TEST(CkptRobustnessTest, FlippedBytesFailTheCrc) {
  TempDir dir;
  const std::string original = ReadBytes(WriteSample(dir));
  const std::string path = dir.Join("flipped.ckpt");
  int crc_mismatches = 0;
  for (size_t offset = 0; offset < original.size(); offset += original.size() / 61) {
    std::string bytes = original;
    bytes[offset] = static_cast<char>(bytes[offset] ^ 0x5a);
    WriteBytes(path, bytes);
    ReadResult result = Read(path);
    ExpectClearError(result, path, bytes.size());
    if (result.data.status().message().find("CRC mismatch") != std::string::npos) ++crc_mismatches;
  }
  EXPECT_GE(crc_mismatches, 55);  // all but flips inside the trailer's "crc_num"
}

TEST(CkptRobustnessTest, EmptyFileAndFilesThatAreNotCheckpoints) {
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> files = {
      {"empty.ckpt", ""},
      {"text.ckpt", "this is a text file, not a checkpoint\n"},
      {"png.ckpt", std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16)},
      {"zeros.ckpt", std::string(100, '\0')},
  };
  for (const auto& [name, bytes] : files) {
    const std::string path = dir.Join(name);
    WriteBytes(path, bytes);
    ReadResult result = Read(path, {.require_crc = false});
    ExpectClearError(result, path, bytes.size());
    EXPECT_NE(result.data.status().message().find("not a valid checkpoint"), std::string::npos)
        << result.data.status();
  }
  EXPECT_EQ(ReadCheckpoint(dir.Join("missing.ckpt")).status().code(), absl::StatusCode::kNotFound);
}

TEST(CkptRobustnessTest, HugeDeclaredLengthIsRejectedBeforeAllocating) {
  TempDir dir;
  std::string bytes = "\x0a";  // a Value field whose varint length is 2^60
  uint64_t length = uint64_t{1} << 60;
  for (; length >= 0x80; length >>= 7) bytes.push_back(static_cast<char>((length & 0x7f) | 0x80));
  bytes.push_back(static_cast<char>(length));
  bytes += std::string(100, 'x');
  const std::string path = dir.Join("huge.ckpt");
  WriteBytes(path, testing::WithCrcTrailer(bytes));
  ReadResult result = Read(path);
  ExpectClearError(result, path, 0);
  EXPECT_NE(result.data.status().message().find("declares 1152921504606846976 bytes but only 100"),
            std::string::npos)
      << result.data.status();
}

proto::Checkpoint::Value FloatValue(const std::string& tag, std::vector<int64_t> dims,
                                    size_t content_bytes) {
  proto::Checkpoint::Value value;
  value.set_tag(tag);
  for (int64_t dim : dims) value.mutable_tensor()->add_dims(dim);
  value.mutable_tensor()->set_tensor_type("Float32");
  value.mutable_tensor()->set_tensor_content(std::string(content_bytes, '\0'));
  return value;
}

// Each case: the Values of a file with a valid CRC, and what its error must say.
struct BadValues {
  std::string name;
  std::vector<proto::Checkpoint::Value> values;
  std::string error;
};

TEST(CkptRobustnessTest, BadShapesTypesAndTagsAreNamed) {
  proto::Checkpoint::Value complex = FloatValue("c", {2}, 16);
  complex.mutable_tensor()->set_tensor_type("Complex64");
  proto::Checkpoint::Value no_type = FloatValue("n", {2}, 8);
  no_type.mutable_tensor()->clear_tensor_type();
  // No bytes, but NumElements would pass 2^63 on the way (tests/fuzz/regressions/checkpoint/).
  proto::Checkpoint::Value many = FloatValue("m", {int64_t{1} << 32, int64_t{1} << 31, 0}, 0);
  many.mutable_tensor()->set_tensor_type("UInt8");
  const std::vector<BadValues> cases = {
      {"overflowing dims",
       {FloatValue("w", {int64_t{1} << 40, int64_t{1} << 40}, 4)},
       "tensor 'w': its dims [1099511627776, 1099511627776] overflow 64 bits"},
      {"element count over 64 bits", {many}, "its dims [4294967296, 2147483648, 0] overflow"},
      {"dims over the file", {FloatValue("w", {1 << 20, 1 << 10}, 4)}, "need more bytes"},
      {"short content", {FloatValue("w", {4}, 12)}, "12 bytes of content in 1 slice(s), but"},
      {"slices over the dims",
       {FloatValue("w", {4}, 8), FloatValue("w", {4}, 16)},
       "its slices hold more bytes than its dims [4] need (16)"},
      {"slice dims differ",
       {FloatValue("w", {4}, 8), FloatValue("w", {2, 2}, 8)},
       "a slice's type or dims differ"},
      {"negative dim", {FloatValue("w", {-4}, 16)}, "negative dimension -4"},
      {"twice",
       {FloatValue("a", {1}, 4), FloatValue("b", {1}, 4), FloatValue("a", {1}, 4)},
       "tensor 'a': appears twice"},
      {"unknown type", {complex}, "unknown tensor_type 'Complex64' (MindSpore's are: Int8"},
      {"missing required field", {no_type}, "a malformed Value (tensor.tensor_type)"},
  };
  TempDir dir;
  for (const BadValues& bad : cases) {
    SCOPED_TRACE(bad.name);
    std::string content;
    for (const auto& value : bad.values) content += testing::ValueBytes(value);
    const std::string path = dir.Join("bad.ckpt");
    WriteBytes(path, testing::WithCrcTrailer(content));
    ReadResult result = Read(path);
    ExpectClearError(result, path, content.size());
    EXPECT_NE(result.data.status().message().find(bad.error), std::string::npos)
        << result.data.status();
  }
}

TEST(CkptRobustnessTest, CrcTrailerOverThirtyTwoBitsIsCorrupt) {
  TempDir dir;
  std::string bytes = testing::WithCrcTrailer(testing::ValueBytes(FloatValue("w", {1}, 4)));
  bytes[bytes.size() - 10] = '\x01';
  const std::string path = dir.Join("trailer.ckpt");
  WriteBytes(path, bytes);
  ReadResult result = Read(path);
  ExpectClearError(result, path, bytes.size());
  EXPECT_NE(result.data.status().message().find("over 32 bits"), std::string::npos);
}

// A sparse file holds as many bytes as its tensor claims (2^40) without holding the tensor: the
// claim is refused naming the file and the tensor, with no allocation anywhere near its size.
TEST(CkptRobustnessTest, SparseFileWhoseTensorClaimsATerabyte) {
  TempDir dir;
  const std::string path = dir.Join("sparse.ckpt");
  WriteBytes(path, testing::ValueBytes(FloatValue("fc.weight", {int64_t{1} << 38}, 4)));
  std::filesystem::resize_file(path, uint64_t{1} << 40);
  for (const ReadOptions& options : {ReadOptions{}, ReadOptions{.require_crc = false}}) {
    ReadResult result = Read(path, options);
    ASSERT_FALSE(result.data.ok());
    EXPECT_TRUE(absl::IsResourceExhausted(result.data.status())) << result.data.status();
    EXPECT_NE(result.data.status().message().find(
                  path + ": tensor 'fc.weight' at byte 0: Float32[274877906944] needs "
                         "1099511627776 bytes, more than"),
              std::string::npos)
        << result.data.status();
    EXPECT_LE(result.largest_allocation, kFixedBuffers);
  }
}

// Zeros after a Value claiming 2^31 - 1 bytes (all the file holds) fail at their first byte.
TEST(CkptRobustnessTest, SparseFileWhoseValueClaimsTwoGigabytes) {
  TempDir dir;
  const std::string path = dir.Join("sparse.ckpt");
  std::string bytes = "\x0a\xff\xff\xff\xff\x07";
  WriteBytes(path, bytes);
  std::filesystem::resize_file(path, uint64_t{1} << 40);
  ReadResult result = Read(path, {.require_crc = false});
  ExpectClearError(result, path, 0);
  EXPECT_NE(result.data.status().message().find("at byte 0: a malformed Value"), std::string::npos)
      << result.data.status();
}

// A FIFO would block open() until a writer came; a directory cannot be read.
TEST(CkptRobustnessTest, OnlyRegularFilesAreRead) {
  TempDir dir;
  const std::string fifo = dir.Join("fifo.ckpt");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  absl::Status status = ReadCheckpoint(fifo).status();
  EXPECT_EQ(status.message(), fifo +
                                  " is a FIFO (named pipe), not a regular file: it cannot be "
                                  "read as one");
  status = ReadCheckpoint(dir.path()).status();
  EXPECT_NE(status.message().find(dir.path() + " is a directory, not a regular file"),
            std::string::npos)
      << status;
  status = ReadWholeFile(fifo).status();
  EXPECT_NE(status.message().find("is a FIFO"), std::string::npos) << status;
}

}  // namespace
}  // namespace lockstep::ckpt
