#include "ckpt/reader.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <new>
#include <optional>
#include <unordered_set>

#include "absl/strings/str_format.h"
#include "ckpt/checkpoint.pb.h"
#include "core/file_io.h"
#include "core/host_memory.h"

namespace lockstep::ckpt {
namespace {

constexpr uint64_t kCrcChunkBytes = uint64_t{1} << 20;
constexpr uint32_t kValueTag = (1 << 3) | 2;  // field 1, length-delimited

absl::Status Corrupt(const std::string& path, uint64_t offset, absl::string_view what) {
  return absl::DataLossError(
      absl::StrCat(path, ": not a valid checkpoint at byte ", offset, ": ", what));
}

// The trailer's CRC, or nullopt when the file has no trailer.
absl::StatusOr<std::optional<uint32_t>> ReadTrailer(const ReadOnlyFile& file) {
  if (file.size() < kCrcTrailerBytes) return std::nullopt;
  std::string tail(kCrcTrailerBytes, '\0');
  LS_RETURN_IF_ERROR(file.ReadAt(file.size() - kCrcTrailerBytes, kCrcTrailerBytes, tail.data()));
  std::optional<uint64_t> crc = DecodeCrcTrailer(tail);
  if (!crc.has_value()) return std::nullopt;
  if (*crc > UINT32_MAX) {
    return Corrupt(file.path(), file.size() - kCrcTrailerBytes,
                   "the crc_num trailer holds a value over 32 bits");
  }
  return static_cast<uint32_t>(*crc);
}

absl::StatusOr<uint32_t> Crc32OfPrefix(const ReadOnlyFile& file, uint64_t bytes) {
  std::string buffer(std::min(bytes, kCrcChunkBytes), '\0');
  uLong crc = crc32_z(0, Z_NULL, 0);
  for (uint64_t offset = 0; offset < bytes;) {
    const uint64_t n = std::min(kCrcChunkBytes, bytes - offset);
    LS_RETURN_IF_ERROR(file.ReadAt(offset, n, buffer.data()));
    crc = crc32_z(crc, reinterpret_cast<const Bytef*>(buffer.data()), n);
    offset += n;
  }
  return static_cast<uint32_t>(crc);
}

// Bytes of a tensor of `dims` (not negative) and elements of `size` bytes, or nullopt when they
// or its element count overflow. The count is multiplied out from the left, as NumElements does,
// so [2^32, 2^31, 0] (no bytes, but 2^63 on the way) is refused.
std::optional<uint64_t> ContentBytes(const std::vector<int64_t>& dims, size_t size) {
  int64_t elements = 1;
  for (int64_t dim : dims) {
    if (__builtin_mul_overflow(elements, dim, &elements)) return std::nullopt;
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(elements), size, &bytes)) return std::nullopt;
  return bytes;
}

// Turns Values into entries: consecutive Values with one tag are slices of one tensor.
class EntryBuilder {
 public:
  EntryBuilder(CheckpointData* data, uint64_t content_bytes)
      : data_(data), content_bytes_(content_bytes) {}

  absl::Status Add(proto::Checkpoint::Value& value, uint64_t offset);
  absl::Status Finish() { return CompleteLast(); }

 private:
  absl::Status StartEntry(proto::Checkpoint::Value& value, const TensorTypeInfo& type,
                          uint64_t offset);
  absl::Status CompleteLast();
  absl::Status Error(uint64_t offset, absl::string_view tag, absl::string_view what) const {
    return Corrupt(data_->path, offset, absl::StrCat("tensor '", tag, "': ", what));
  }

  CheckpointData* data_;
  uint64_t content_bytes_;
  std::unordered_set<std::string> names_;
  // The last entry, while more slices of it may follow.
  bool open_ = false;
  std::vector<int64_t> dims_;  // as stored
  uint64_t expected_ = 0;      // content bytes its dims need
  uint64_t offset_ = 0;        // of its first Value
};

absl::Status EntryBuilder::Add(proto::Checkpoint::Value& value, uint64_t offset) {
  const std::string& tag = value.tag();
  if (value.has_maptensor()) {
    LS_RETURN_IF_ERROR(CompleteLast());
    if (!names_.insert(tag).second) return Error(offset, tag, "appears twice");
    data_->map_parameters.push_back(tag);
    return absl::OkStatus();
  }
  if (!value.has_tensor()) return Error(offset, tag, "the Value holds no tensor");
  const proto::TensorProto& tensor = value.tensor();
  const TensorTypeInfo* type = FindTensorType(tensor.tensor_type());
  if (type == nullptr) {
    return Error(offset, tag,
                 absl::StrCat("unknown tensor_type '", tensor.tensor_type(),
                              "' (MindSpore's are: ", KnownTensorTypes(), ")"));
  }
  for (int64_t dim : tensor.dims()) {
    if (dim < 0) return Error(offset, tag, absl::StrCat("negative dimension ", dim));
  }
  if (!open_ || data_->entries.back().name != tag) return StartEntry(value, *type, offset);
  // Another slice of the last tensor.
  Entry& last = data_->entries.back();
  const std::string& content = value.tensor().tensor_content();
  if (type != last.type ||
      !std::equal(dims_.begin(), dims_.end(), tensor.dims().begin(), tensor.dims().end())) {
    return Error(offset, tag, "a slice's type or dims differ from the first slice's");
  }
  if (last.content.size() + content.size() > std::max<uint64_t>(expected_, type->size)) {
    return Error(offset, tag,
                 absl::StrCat("its slices hold more bytes than its dims ", ShapeToString(dims_),
                              " need (", expected_, ")"));
  }
  last.content.append(content);
  ++last.slices;
  return absl::OkStatus();
}

absl::Status EntryBuilder::StartEntry(proto::Checkpoint::Value& value, const TensorTypeInfo& type,
                                      uint64_t offset) {
  LS_RETURN_IF_ERROR(CompleteLast());
  const std::string& tag = value.tag();
  if (!names_.insert(tag).second) return Error(offset, tag, "appears twice");
  proto::TensorProto* tensor = value.mutable_tensor();
  dims_.assign(tensor->dims().begin(), tensor->dims().end());
  std::optional<uint64_t> expected = ContentBytes(dims_, type.size);
  if (!expected.has_value()) {
    return Error(offset, tag, absl::StrCat("its dims ", ShapeToString(dims_), " overflow 64 bits"));
  }
  if (type.numeric() && *expected > content_bytes_) {
    return Error(offset, tag,
                 absl::StrCat("its dims ", ShapeToString(dims_),
                              " need more bytes than the whole file holds (", content_bytes_, ")"));
  }
  // A sparse file may hold as many bytes as a tensor claims without holding the tensor.
  if (type.numeric()) {
    LS_RETURN_IF_ERROR(
        CheckHostMemory(*expected, absl::StrCat(data_->path, ": tensor '", tag, "' at byte ",
                                                offset, ": ", type.name, ShapeToString(dims_))));
  }
  expected_ = type.numeric() ? *expected : UINT64_MAX;
  Entry& entry = data_->entries.emplace_back();
  entry.name = tag;
  entry.type = &type;
  // Further slices append to the content as they are read: nothing is reserved for the
  // declared size, which the file has not shown it holds.
  entry.content.swap(*tensor->mutable_tensor_content());
  offset_ = offset;
  open_ = true;
  return absl::OkStatus();
}

absl::Status EntryBuilder::CompleteLast() {
  if (!open_) return absl::OkStatus();
  open_ = false;
  Entry& entry = data_->entries.back();
  if (!entry.type->numeric()) {
    entry.shape = dims_;
    return absl::OkStatus();
  }
  entry.shape = ShapeFromDisk(dims_, entry.content.size(), *entry.type);
  const uint64_t expected = *ContentBytes(entry.shape, entry.type->size);
  if (entry.content.size() != expected) {
    return Error(
        offset_, entry.name,
        absl::StrCat(entry.content.size(), " bytes of content in ", entry.slices, " slice(s), but ",
                     entry.type->name, ShapeToString(dims_), " needs ", expected));
  }
  return absl::OkStatus();
}

// The Value of `length` bytes (bounded by the bytes left) at `offset`, parsed as it is read: a
// Value that goes wrong early (zeros, as a sparse file holds) is refused without reading the rest.
absl::Status ReadValue(google::protobuf::io::CodedInputStream& coded, uint64_t length,
                       uint64_t offset, const std::string& path, proto::Checkpoint::Value* value) {
  value->Clear();
  const auto limit = coded.PushLimit(static_cast<int>(length));
  const bool parsed = value->ParsePartialFromCodedStream(&coded) && coded.BytesUntilLimit() == 0;
  coded.PopLimit(limit);
  if (!parsed || !value->IsInitialized()) {
    return Corrupt(path, offset,
                   absl::StrCat("a malformed Value (", value->InitializationErrorString(), ")"));
  }
  return absl::OkStatus();
}

// Walks the top-level fields of the content (a concatenation of single-Value Checkpoints), each
// length bounded by the bytes left before it is read.
absl::Status ParseValues(const ReadOnlyFile& file, uint64_t content_bytes, CheckpointData* data) {
  google::protobuf::io::FileInputStream file_stream(file.fd());
  google::protobuf::io::LimitingInputStream limited(&file_stream, content_bytes);
  EntryBuilder builder(data, content_bytes);
  proto::Checkpoint::Value value;
  for (uint64_t offset = 0; offset < content_bytes;) {
    google::protobuf::io::CodedInputStream coded(&limited);
    const uint32_t tag = coded.ReadTag();
    if (tag != kValueTag) {
      return Corrupt(
          data->path, offset,
          absl::StrFormat("expected a Checkpoint Value (tag 0x0a), found tag 0x%x", tag));
    }
    uint64_t length = 0;
    if (!coded.ReadVarint64(&length)) return Corrupt(data->path, offset, "the length is cut off");
    const uint64_t remaining = content_bytes - offset - coded.CurrentPosition();
    if (length > remaining) {
      return Corrupt(data->path, offset,
                     absl::StrCat("a Value declares ", length, " bytes but only ", remaining,
                                  " remain: truncated or corrupt"));
    }
    if (length > INT_MAX) return Corrupt(data->path, offset, "a Value over 2 GiB");
    // What the file holds may still be more than memory can: such an allocation is an error too.
    try {
      LS_RETURN_IF_ERROR(ReadValue(coded, length, offset, data->path, &value));
      LS_RETURN_IF_ERROR(builder.Add(value, offset));
    } catch (const std::bad_alloc&) {
      return absl::ResourceExhaustedError(absl::StrCat(data->path, ": out of memory reading the ",
                                                       length, "-byte Value at byte ", offset));
    }
    offset += coded.CurrentPosition();
  }
  return builder.Finish();
}

absl::Status CheckCrc(const ReadOnlyFile& file, uint64_t content_bytes, const ReadOptions& options,
                      CheckpointData* data) {
  LS_ASSIGN_OR_RETURN(data->computed_crc, Crc32OfPrefix(file, content_bytes));
  if (data->computed_crc == data->stored_crc) {
    data->crc_status = CrcStatus::kVerified;
    return absl::OkStatus();
  }
  data->crc_status = CrcStatus::kMismatch;
  if (!options.fail_on_crc_mismatch) return absl::OkStatus();
  return absl::DataLossError(absl::StrFormat(
      "%s: CRC mismatch: the trailer says %08x, the content has %08x: the file is corrupt",
      file.path(), data->stored_crc, data->computed_crc));
}

}  // namespace

const char* CrcStatusName(CrcStatus status) {
  switch (status) {
    case CrcStatus::kVerified:
      return "ok";
    case CrcStatus::kAbsent:
      return "absent";
    case CrcStatus::kMismatch:
      return "MISMATCH";
  }
  return "?";
}

absl::StatusOr<Tensor> Entry::ToTensor() const {
  if (!type->dtype.has_value()) {
    return absl::UnimplementedError(
        absl::StrCat("tensor '", name, "' is ", type->name, ", which Lockstep has no dtype for"));
  }
  Tensor tensor = Tensor::Empty(shape, *type->dtype);
  std::memcpy(tensor.raw_data(), content.data(), content.size());
  return tensor;
}

const Entry* CheckpointData::Find(absl::string_view name) const {
  for (const Entry& entry : entries) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

absl::StatusOr<int64_t> CheckpointData::Int64Scalar(absl::string_view name) const {
  const Entry* entry = Find(name);
  if (entry == nullptr) {
    return absl::NotFoundError(absl::StrCat(path, ": no value '", name, "'"));
  }
  if (entry->type->dtype != DType::kI64 || entry->content.size() != sizeof(int64_t)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": '", name, "' is ", entry->type->name,
                                                   ShapeToString(entry->shape),
                                                   ", not an Int64 scalar"));
  }
  int64_t value;
  std::memcpy(&value, entry->content.data(), sizeof(value));
  return value;
}

absl::StatusOr<CheckpointData> ReadCheckpoint(const std::string& path, const ReadOptions& options) {
  LS_ASSIGN_OR_RETURN(ReadOnlyFile file, ReadOnlyFile::Open(path));
  CheckpointData data;
  data.path = path;
  data.file_bytes = file.size();
  if (file.size() == 0) return Corrupt(path, 0, "the file is empty");
  LS_ASSIGN_OR_RETURN(std::optional<uint32_t> trailer, ReadTrailer(file));
  uint64_t content_bytes = file.size();
  if (trailer.has_value()) {
    content_bytes -= kCrcTrailerBytes;
    data.stored_crc = *trailer;
    LS_RETURN_IF_ERROR(CheckCrc(file, content_bytes, options, &data));
  }
  LS_RETURN_IF_ERROR(ParseValues(file, content_bytes, &data));
  if (!trailer.has_value() && options.require_crc) {
    return absl::DataLossError(
        absl::StrCat(path,
                     ": no crc_num trailer at the end: the file is truncated (or was written by "
                     "MindSpore without crc_check)"));
  }
  return data;
}

absl::StatusOr<uint32_t> ReadTrailerCrc(const std::string& path) {
  LS_ASSIGN_OR_RETURN(ReadOnlyFile file, ReadOnlyFile::Open(path));
  LS_ASSIGN_OR_RETURN(std::optional<uint32_t> trailer, ReadTrailer(file));
  if (!trailer.has_value()) {
    return absl::DataLossError(absl::StrCat(path, ": no crc_num trailer at the end"));
  }
  return *trailer;
}

}  // namespace lockstep::ckpt
