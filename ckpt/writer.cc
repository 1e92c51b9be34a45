#include "ckpt/writer.h"

#include <zlib.h>

#include "ckpt/checkpoint.pb.h"

namespace lockstep::ckpt {
namespace {

// MindSpore flattens a tensor and cuts it with numpy.array_split into `pieces` runs of elements:
// the first n % pieces runs get one element more; more pieces than elements leaves empty runs.
int64_t ElementsOfPiece(int64_t n, int64_t pieces, int64_t piece) {
  return n / pieces + (piece < n % pieces ? 1 : 0);
}

}  // namespace

absl::StatusOr<CheckpointWriter> CheckpointWriter::Open(std::string path, WriteOptions options) {
  if (options.slice_bytes == 0) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint ", path, ": slice_bytes is 0"));
  }
  LS_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Create(std::move(path)));
  return CheckpointWriter(std::move(file), options);
}

absl::Status CheckpointWriter::Add(absl::string_view name, const Tensor& tensor) {
  if (!tensor.defined() || tensor.device().type != DeviceType::kCPU) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint ", file_.path(), ": tensor '", name,
                                                   "' must be a defined CPU tensor"));
  }
  absl::string_view content(static_cast<const char*>(tensor.raw_data()), tensor.nbytes());
  return AddRaw(name, TensorTypeOf(tensor.dtype()), tensor.shape(), content);
}

absl::Status CheckpointWriter::AddInt64(absl::string_view name, int64_t value) {
  absl::string_view content(reinterpret_cast<const char*>(&value), sizeof(value));
  return AddRaw(name, TensorTypeOf(DType::kI64), {}, content);
}

absl::Status CheckpointWriter::AddRaw(absl::string_view name, const TensorTypeInfo& type,
                                      const Shape& shape, absl::string_view content) {
  auto error = [&](absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint ", file_.path(), ": tensor '", name, "': ", what));
  };
  if (name.empty()) return error("the name is empty");
  if (!names_.emplace(name).second) return error("added twice");
  for (int64_t dim : shape) {
    if (dim < 0) return error(absl::StrCat("negative dimension in ", ShapeToString(shape)));
  }
  const size_t expected = static_cast<size_t>(NumElements(shape)) * type.size;
  if (type.numeric() && content.size() != expected) {
    return error(absl::StrCat(content.size(), " bytes of content for ", type.name,
                              ShapeToString(shape), ", which needs ", expected));
  }
  const auto pieces =
      static_cast<int64_t>((content.size() + options_.slice_bytes - 1) / options_.slice_bytes);
  if (pieces <= 1 || !type.numeric()) return WriteValue(name, type, shape, content);
  const auto elements = static_cast<int64_t>(content.size() / type.size);
  size_t start = 0;
  for (int64_t piece = 0; piece < pieces; ++piece) {
    const size_t bytes = ElementsOfPiece(elements, pieces, piece) * type.size;
    LS_RETURN_IF_ERROR(WriteValue(name, type, shape, content.substr(start, bytes)));
    start += bytes;
  }
  return absl::OkStatus();
}

absl::Status CheckpointWriter::WriteValue(absl::string_view name, const TensorTypeInfo& type,
                                          const Shape& shape, absl::string_view content) {
  proto::Checkpoint message;
  proto::Checkpoint::Value* value = message.add_value();
  value->set_tag(std::string(name));
  proto::TensorProto* tensor = value->mutable_tensor();
  for (int64_t dim : DimsOnDisk(shape)) tensor->add_dims(dim);
  tensor->set_tensor_type(type.name);
  tensor->set_tensor_content(content.data(), content.size());
  std::string bytes;
  if (!message.SerializeToString(&bytes)) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint ", file_.path(), ": tensor '", name,
                                                   "' does not fit in one protobuf message"));
  }
  crc_ = crc32_z(crc_, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size());
  return file_.Write(bytes);
}

absl::StatusOr<WrittenFile> CheckpointWriter::Finish() {
  LS_RETURN_IF_ERROR(file_.Write(EncodeCrcTrailer(crc_)));
  LS_RETURN_IF_ERROR(file_.Commit());
  return WrittenFile{file_.path(), file_.bytes_written(), crc_};
}

}  // namespace lockstep::ckpt
