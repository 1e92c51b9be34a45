// libFuzzer target of the .ckpt reader: the input is read as a checkpoint file the way
// `lockstep-ckpt list` reads one (CRC problems tolerated, so the parser sees mutated content),
// the way resume does (CRC required), and again as the start of a sparse file of 2^40 bytes; then
// every entry goes through what the readers' callers do with it. A rejected file must be a clear
// error naming the file.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>

#include "ckpt/inspect.h"
#include "ckpt/reader.h"
#include "core/logging.h"
#include "tests/fuzz/fuzz_dir.h"

namespace lockstep::ckpt {
namespace {

void Use(const absl::StatusOr<CheckpointData>& data, const std::string& path) {
  if (!data.ok()) {
    LS_CHECK(data.status().message().find(path) != absl::string_view::npos) << data.status();
    return;
  }
  for (const Entry& entry : data->entries) {
    if (!entry.type->numeric()) continue;
    LS_CHECK(entry.content.size() ==
             static_cast<uint64_t>(NumElements(entry.shape)) * entry.type->size)
        << entry.name << ": " << entry.content.size() << " bytes for "
        << ShapeToString(entry.shape);
    ComputeStats(entry);
    if (entry.type->dtype.has_value()) LS_CHECK(entry.ToTensor().ok()) << entry.name;
  }
  data->Int64Scalar("step_num").IgnoreError();
}

}  // namespace
}  // namespace lockstep::ckpt

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep::ckpt;
  static const lockstep::fuzz::FuzzDir dir;
  const std::string path = dir.Write("net_0-1_1.ckpt", data, size);
  Use(ReadCheckpoint(path, {.require_crc = false, .fail_on_crc_mismatch = false}), path);
  Use(ReadCheckpoint(path), path);
  // The same bytes at the start of a sparse file of 2^40 bytes: the file can back any size a
  // tensor claims, memory cannot (such a file once made `lockstep-ckpt list` abort).
  std::error_code error;
  std::filesystem::resize_file(path, uint64_t{1} << 40, error);
  if (!error) {
    Use(ReadCheckpoint(path, {.require_crc = false, .fail_on_crc_mismatch = false}), path);
  }
  return 0;
}
