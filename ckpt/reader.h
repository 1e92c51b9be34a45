#pragma once

// Reads a .ckpt in MindSpore's wire format, ours or MindSpore's. Every length in the file is
// checked against the bytes that remain before anything is allocated for it, so no file, however
// corrupt, makes the reader allocate more than its own size.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "ckpt/format.h"
#include "core/status.h"
#include "core/tensor.h"

namespace lockstep::ckpt {

// One tensor, its slices rejoined.
struct Entry {
  std::string name;
  const TensorTypeInfo* type = nullptr;  // never null once read
  Shape shape;                           // {} for a scalar
  std::string content;                   // raw little-endian row-major elements
  int slices = 1;                        // Values it was stored in

  // A Lockstep tensor holding a copy of the content; fails for types Lockstep has no dtype for.
  absl::StatusOr<Tensor> ToTensor() const;
};

enum class CrcStatus {
  kVerified,  // the trailer matches the content
  kAbsent,    // no trailer (MindSpore writes none unless crc_check=True)
  kMismatch,  // only with ReadOptions::fail_on_crc_mismatch off
};
const char* CrcStatusName(CrcStatus status);

struct CheckpointData {
  std::string path;
  uint64_t file_bytes = 0;
  CrcStatus crc_status = CrcStatus::kAbsent;
  uint32_t stored_crc = 0;                  // from the trailer
  uint32_t computed_crc = 0;                // over the content
  std::vector<Entry> entries;               // in file order
  std::vector<std::string> map_parameters;  // MindSpore MapParameter Values: listed, not loaded

  const Entry* Find(absl::string_view name) const;
  // The Int64 scalar `name` (epoch_num, step_num, ...).
  absl::StatusOr<int64_t> Int64Scalar(absl::string_view name) const;
};

struct ReadOptions {
  // Without a trailer a truncation at a Value boundary cannot be told from a shorter file, so
  // Lockstep's own checkpoints require one; files MindSpore wrote without crc_check have none.
  bool require_crc = true;
  bool fail_on_crc_mismatch = true;
};

absl::StatusOr<CheckpointData> ReadCheckpoint(const std::string& path,
                                              const ReadOptions& options = {});

// The CRC in the file's trailer, read without the rest of the file.
absl::StatusOr<uint32_t> ReadTrailerCrc(const std::string& path);

}  // namespace lockstep::ckpt
