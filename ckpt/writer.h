#pragma once

// Writes a .ckpt in MindSpore's wire format, one Value at a time: each Value is serialized as
// its own single-Value Checkpoint message, appended to the file and chained into the CRC, so a
// checkpoint never needs a second copy of the model in memory.

#include <cstdint>
#include <string>
#include <unordered_set>

#include "absl/strings/string_view.h"
#include "ckpt/format.h"
#include "core/file_io.h"
#include "core/status.h"
#include "core/tensor.h"

namespace lockstep::ckpt {

struct WriteOptions {
  uint64_t slice_bytes = kMindSporeSliceBytes;  // tensors larger than this are split (format.h)
};

// A finished checkpoint file.
struct WrittenFile {
  std::string path;
  uint64_t bytes = 0;
  uint32_t crc32 = 0;
};

class CheckpointWriter {
 public:
  // Writes `path`.tmp; Finish renames it to `path`. Dropped unfinished, nothing is left.
  static absl::StatusOr<CheckpointWriter> Open(std::string path, WriteOptions options = {});

  // A CPU tensor under `name` (unique in the file), as its dtype's MindSpore tensor_type.
  absl::Status Add(absl::string_view name, const Tensor& tensor);
  // An Int64 scalar, as MindSpore stores epoch_num and step_num.
  absl::Status AddInt64(absl::string_view name, int64_t value);
  // Any MindSpore tensor_type; `content` is the raw little-endian row-major elements.
  absl::Status AddRaw(absl::string_view name, const TensorTypeInfo& type, const Shape& shape,
                      absl::string_view content);
  // Appends the CRC trailer and makes the file durable under its name.
  absl::StatusOr<WrittenFile> Finish();

 private:
  CheckpointWriter(AtomicFile file, WriteOptions options)
      : file_(std::move(file)), options_(options) {}
  absl::Status WriteValue(absl::string_view name, const TensorTypeInfo& type, const Shape& shape,
                          absl::string_view content);

  AtomicFile file_;
  WriteOptions options_;
  uint32_t crc_ = 0;
  std::unordered_set<std::string> names_;
};

}  // namespace lockstep::ckpt
