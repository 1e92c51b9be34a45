// Writing and reading .ckpt files: every dtype, scalars, empty tensors, slicing, and the exact
// MindSpore layout (single-Value messages, dims [0] for scalars, the crc_num trailer).

#include <gtest/gtest.h>

#include <filesystem>

#include "ckpt/reader.h"
#include "ckpt/writer.h"
#include "tests/ckpt/test_util.h"

namespace lockstep::ckpt {
namespace {

using testing::Bytes;
using testing::PatternTensor;
using testing::ReadBytes;
using testing::TempDir;

CheckpointData ReadOk(const std::string& path, const ReadOptions& options = {}) {
  absl::StatusOr<CheckpointData> data = ReadCheckpoint(path, options);
  EXPECT_TRUE(data.ok()) << data.status();
  return data.ok() ? *std::move(data) : CheckpointData{};
}

// The file without its trailer, parsed the way MindSpore parses it: as one Checkpoint message.
proto::Checkpoint ParseAsMindSporeDoes(const std::string& path) {
  std::string bytes = ReadBytes(path);
  EXPECT_GE(bytes.size(), kCrcTrailerBytes);
  bytes.resize(bytes.size() - kCrcTrailerBytes);
  proto::Checkpoint checkpoint;
  EXPECT_TRUE(checkpoint.ParseFromString(bytes));
  return checkpoint;
}

WrittenFile Write(const std::string& path,
                  const std::vector<std::pair<std::string, Tensor>>& tensors,
                  WriteOptions options = {}) {
  absl::StatusOr<CheckpointWriter> writer = CheckpointWriter::Open(path, options);
  EXPECT_TRUE(writer.ok()) << writer.status();
  for (const auto& [name, tensor] : tensors) EXPECT_TRUE(writer->Add(name, tensor).ok()) << name;
  absl::StatusOr<WrittenFile> file = writer->Finish();
  EXPECT_TRUE(file.ok()) << file.status();
  return file.ok() ? *file : WrittenFile{};
}

TEST(CkptIoTest, RoundTripsEveryDType) {
  TempDir dir;
  const std::vector<DType> dtypes = {DType::kF32, DType::kF16, DType::kBF16, DType::kF64,
                                     DType::kI32, DType::kI64, DType::kU8,   DType::kBool};
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (size_t i = 0; i < dtypes.size(); ++i) {
    tensors.emplace_back(DTypeName(dtypes[i]), PatternTensor({2, 3, 5}, dtypes[i], i));
  }
  Write(dir.Join("all.ckpt"), tensors);
  CheckpointData data = ReadOk(dir.Join("all.ckpt"));
  EXPECT_EQ(data.crc_status, CrcStatus::kVerified);
  ASSERT_EQ(data.entries.size(), dtypes.size());
  for (size_t i = 0; i < dtypes.size(); ++i) {
    const Entry& entry = data.entries[i];
    EXPECT_EQ(entry.name, DTypeName(dtypes[i]));
    EXPECT_EQ(entry.type->name, std::string(TensorTypeName(dtypes[i])));
    EXPECT_EQ(entry.shape, (Shape{2, 3, 5}));
    EXPECT_EQ(entry.content, Bytes(tensors[i].second));
    absl::StatusOr<Tensor> tensor = entry.ToTensor();
    ASSERT_TRUE(tensor.ok()) << tensor.status();
    EXPECT_EQ(tensor->dtype(), dtypes[i]);
    EXPECT_EQ(Bytes(*tensor), Bytes(tensors[i].second));
  }
}

TEST(CkptIoTest, RoundTripsMindSporeOnlyTypesAndText) {
  TempDir dir;
  const std::vector<std::string> types = {"Int8", "Int16", "UInt16", "UInt32", "UInt64"};
  absl::StatusOr<CheckpointWriter> writer = CheckpointWriter::Open(dir.Join("ms.ckpt"));
  ASSERT_TRUE(writer.ok());
  std::vector<std::string> contents;
  for (const std::string& name : types) {
    const TensorTypeInfo* type = FindTensorType(name);
    ASSERT_NE(type, nullptr) << name;
    contents.emplace_back(4 * type->size, '\0');
    for (size_t i = 0; i < contents.back().size(); ++i)
      contents.back()[i] = static_cast<char>(i + 1);
    ASSERT_TRUE(writer->AddRaw(name, *type, {4}, contents.back()).ok());
  }
  ASSERT_TRUE(writer->AddRaw("note", *FindTensorType("str"), {}, "resnet50 v1.5").ok());
  ASSERT_TRUE(writer->Finish().ok());

  CheckpointData data = ReadOk(dir.Join("ms.ckpt"));
  ASSERT_EQ(data.entries.size(), types.size() + 1);
  for (size_t i = 0; i < types.size(); ++i) {
    EXPECT_EQ(data.entries[i].type->name, types[i]);
    EXPECT_EQ(data.entries[i].shape, (Shape{4}));
    EXPECT_EQ(data.entries[i].content, contents[i]);
    EXPECT_FALSE(data.entries[i].ToTensor().ok()) << "no Lockstep dtype for " << types[i];
  }
  EXPECT_EQ(data.entries.back().content, "resnet50 v1.5");
}

TEST(CkptIoTest, ScalarsAreStoredWithDimsZeroAsMindSporeDoes) {
  TempDir dir;
  absl::StatusOr<CheckpointWriter> writer = CheckpointWriter::Open(dir.Join("s.ckpt"));
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE(writer->AddInt64("step_num", 1234567890123).ok());
  ASSERT_TRUE(writer->Add("lr", PatternTensor({}, DType::kF32)).ok());
  ASSERT_TRUE(writer->Finish().ok());

  proto::Checkpoint raw = ParseAsMindSporeDoes(dir.Join("s.ckpt"));
  ASSERT_EQ(raw.value_size(), 2);
  EXPECT_EQ(raw.value(0).tensor().tensor_type(), "Int64");
  ASSERT_EQ(raw.value(0).tensor().dims_size(), 1);
  EXPECT_EQ(raw.value(0).tensor().dims(0), 0);

  CheckpointData data = ReadOk(dir.Join("s.ckpt"));
  EXPECT_EQ(data.entries[0].shape, Shape{});
  EXPECT_EQ(data.entries[1].shape, Shape{});
  EXPECT_EQ(*data.Int64Scalar("step_num"), 1234567890123);
  EXPECT_FALSE(data.Int64Scalar("lr").ok());
  EXPECT_FALSE(data.Int64Scalar("nope").ok());
}

TEST(CkptIoTest, EmptyTensorsRoundTrip) {
  TempDir dir;
  Write(dir.Join("e.ckpt"),
        {{"none", Tensor::Empty({0}, DType::kF32)}, {"rows", Tensor::Empty({0, 4}, DType::kI32)}});
  CheckpointData data = ReadOk(dir.Join("e.ckpt"));
  ASSERT_EQ(data.entries.size(), 2u);
  EXPECT_EQ(data.entries[0].shape, (Shape{0}));
  EXPECT_EQ(data.entries[1].shape, (Shape{0, 4}));
}

TEST(CkptIoTest, TensorsOverTheSliceSizeSplitAsArraySplitDoesAndRejoin) {
  TempDir dir;
  const Tensor big = PatternTensor({7, 100}, DType::kF32);   // 2800 bytes: 234, 233, 233 floats
  const Tensor thin = PatternTensor({2, 1000}, DType::kU8);  // 2000 bytes: 2 slices
  const Tensor small = PatternTensor({10}, DType::kF32, 3);  // under the slice size
  Write(dir.Join("sliced.ckpt"), {{"big", big}, {"thin", thin}, {"small", small}},
        {.slice_bytes = 1000});

  proto::Checkpoint raw = ParseAsMindSporeDoes(dir.Join("sliced.ckpt"));
  std::vector<std::pair<std::string, size_t>> values;
  for (const auto& value : raw.value()) {
    values.emplace_back(value.tag(), value.tensor().tensor_content().size());
    if (value.tag() == "big") {
      EXPECT_EQ(value.tensor().dims_size(), 2);  // every slice carries the full dims
    }
  }
  const std::vector<std::pair<std::string, size_t>> expected = {
      {"big", 936}, {"big", 932}, {"big", 932}, {"thin", 1000}, {"thin", 1000}, {"small", 40}};
  EXPECT_EQ(values, expected);

  CheckpointData data = ReadOk(dir.Join("sliced.ckpt"));
  ASSERT_EQ(data.entries.size(), 3u);
  EXPECT_EQ(data.entries[0].slices, 3);
  EXPECT_EQ(data.entries[0].shape, (Shape{7, 100}));
  EXPECT_EQ(data.entries[0].content, Bytes(big));
  EXPECT_EQ(data.entries[1].slices, 2);
  EXPECT_EQ(data.entries[1].content, Bytes(thin));
  EXPECT_EQ(data.entries[2].slices, 1);
}

TEST(CkptIoTest, MoreSlicesThanElementsLeavesEmptySlicesLikeArraySplit) {
  TempDir dir;
  const Tensor tensor = PatternTensor({2}, DType::kF32);  // 8 bytes in 3 slices of 1, 1, 0 floats
  Write(dir.Join("x.ckpt"), {{"t", tensor}}, {.slice_bytes = 3});
  proto::Checkpoint raw = ParseAsMindSporeDoes(dir.Join("x.ckpt"));
  ASSERT_EQ(raw.value_size(), 3);
  EXPECT_EQ(raw.value(1).tensor().tensor_content().size(), 4u);
  EXPECT_EQ(raw.value(2).tensor().tensor_content().size(), 0u);
  CheckpointData data = ReadOk(dir.Join("x.ckpt"));
  EXPECT_EQ(data.entries[0].shape, (Shape{2}));
  EXPECT_EQ(data.entries[0].content, Bytes(tensor));
}

TEST(CkptIoTest, TrailerIsCrcNumAndZlibCrcOfAllValuesBigEndian) {
  TempDir dir;
  WrittenFile file =
      Write(dir.Join("c.ckpt"),
            {{"w", PatternTensor({64}, DType::kF32)}, {"b", PatternTensor({3}, DType::kF64)}},
            {.slice_bytes = 100});
  const std::string bytes = ReadBytes(dir.Join("c.ckpt"));
  const std::string content = bytes.substr(0, bytes.size() - kCrcTrailerBytes);
  EXPECT_EQ(bytes, testing::WithCrcTrailer(content));
  EXPECT_EQ(file.bytes, bytes.size());
  EXPECT_EQ(*ReadTrailerCrc(dir.Join("c.ckpt")), file.crc32);
  EXPECT_EQ(ReadOk(dir.Join("c.ckpt")).computed_crc, file.crc32);
}

TEST(CkptIoTest, NothingAppearsUntilFinishAndAnAbandonedWriteLeavesNothing) {
  TempDir dir;
  const std::string path = dir.Join("a.ckpt");
  {
    absl::StatusOr<CheckpointWriter> writer = CheckpointWriter::Open(path);
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE(writer->Add("w", PatternTensor({4}, DType::kF32)).ok());
    EXPECT_FALSE(std::filesystem::exists(path));
    EXPECT_TRUE(std::filesystem::exists(path + ".tmp"));
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST(CkptIoTest, RejectsDuplicateEmptyAndMissizedValues) {
  TempDir dir;
  absl::StatusOr<CheckpointWriter> writer = CheckpointWriter::Open(dir.Join("r.ckpt"));
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE(writer->Add("w", PatternTensor({4}, DType::kF32)).ok());
  absl::Status twice = writer->Add("w", PatternTensor({4}, DType::kF32));
  EXPECT_NE(twice.message().find("'w': added twice"), std::string::npos) << twice;
  EXPECT_FALSE(writer->Add("", PatternTensor({4}, DType::kF32)).ok());
  absl::Status missized = writer->AddRaw("m", *FindTensorType("Float32"), {3}, "abc");
  EXPECT_NE(missized.message().find("3 bytes of content for Float32[3], which needs 12"),
            std::string::npos)
      << missized;
  EXPECT_FALSE(CheckpointWriter::Open(dir.Join("z.ckpt"), {.slice_bytes = 0}).ok());
}

TEST(CkptIoTest, ReadsMindSporeFilesWithoutTrailerOnlyWhenAllowed) {
  TempDir dir;
  proto::Checkpoint::Value value;
  value.set_tag("w");
  value.mutable_tensor()->add_dims(2);
  value.mutable_tensor()->set_tensor_type("Float32");
  value.mutable_tensor()->set_tensor_content(std::string(8, '\1'));
  testing::WriteBytes(dir.Join("ms.ckpt"), testing::ValueBytes(value));

  absl::StatusOr<CheckpointData> strict = ReadCheckpoint(dir.Join("ms.ckpt"));
  ASSERT_FALSE(strict.ok());
  EXPECT_NE(strict.status().message().find("no crc_num trailer"), std::string::npos);
  CheckpointData data = ReadOk(dir.Join("ms.ckpt"), {.require_crc = false});
  EXPECT_EQ(data.crc_status, CrcStatus::kAbsent);
  EXPECT_EQ(data.entries[0].shape, (Shape{2}));
}

}  // namespace
}  // namespace lockstep::ckpt
