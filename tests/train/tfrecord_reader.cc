#include "tests/train/tfrecord_reader.h"

#include <cstdint>
#include <cstring>

#include "core/file_io.h"
#include "train/summary/tfrecord.h"

namespace lockstep::train::testing {
namespace {

template <typename T>
T LoadLittleEndian(const char* bytes) {
  T value;
  std::memcpy(&value, bytes, sizeof(T));  // x86 and ARM Linux: little-endian already
  return value;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ReadTfRecords(const std::string& path) {
  LS_ASSIGN_OR_RETURN(std::string file, ReadWholeFile(path));
  std::vector<std::string> records;
  size_t offset = 0;
  while (offset < file.size()) {
    const auto error = [&](absl::string_view what) {
      return absl::DataLossError(absl::StrCat(path, ": record at byte ", offset, ": ", what));
    };
    if (file.size() - offset < 12) return error("truncated header");
    const char* header = file.data() + offset;
    if (LoadLittleEndian<uint32_t>(header + 8) !=
        summary::MaskedCrc32c(absl::string_view(header, 8))) {
      return error("length CRC mismatch");
    }
    const uint64_t length = LoadLittleEndian<uint64_t>(header);
    if (file.size() - offset - 12 < length + 4) return error("truncated data");
    const absl::string_view data(header + 12, length);
    if (LoadLittleEndian<uint32_t>(header + 12 + length) != summary::MaskedCrc32c(data)) {
      return error("data CRC mismatch");
    }
    records.emplace_back(data);
    offset += 12 + length + 4;
  }
  return records;
}

}  // namespace lockstep::train::testing
