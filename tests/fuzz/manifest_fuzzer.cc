// libFuzzer target of the manifest reader: the input is the only manifest of a checkpoint
// directory, read directly, then found and checked as `lockstep-ckpt verify` does and chosen as
// resume does. The directory holds no checkpoint, so the files it names are missing.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "ckpt/inspect.h"
#include "ckpt/manifest.h"
#include "core/logging.h"
#include "tests/fuzz/fuzz_dir.h"


extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep::ckpt;
  static const lockstep::fuzz::FuzzDir dir;
  const std::string path = dir.Write("net-1_1.manifest", data, size);
  absl::StatusOr<proto::Manifest> manifest = ReadManifest(path);
  if (!manifest.ok()) {
    LS_CHECK(manifest.status().message().find(path) != absl::string_view::npos)
        << manifest.status();
    return 0;
  }
  absl::StatusOr<proto::Manifest> found = FindManifest(dir.path(), "", std::nullopt);
  LS_CHECK(found.ok()) << found.status();
  VerifyStep(dir.path(), *found);
  absl::StatusOr<proto::Manifest> latest = LatestCompleteStep(dir.path(), manifest->prefix());
  if (latest.ok()) {
    for (int rank = 0; rank < 4; ++rank) FileForRank(*latest, rank).IgnoreError();
  }
  return 0;
}
