#pragma once

// File names in a checkpoint directory, as MindSpore gives them per rank, plus the manifest
// that marks a step complete.

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace lockstep::ckpt {

// "{prefix}_{rank}-{epoch}_{step}.ckpt"
std::string CheckpointFileName(absl::string_view prefix, int rank, int64_t epoch,
                               int64_t step_in_epoch);
// "{prefix}_{rank}-graph.meta"
std::string GraphMetaFileName(absl::string_view prefix, int rank);
// "{prefix}_{rank}-graph.{fingerprint}.meta": the graph of earlier steps in the directory, kept
// when a resumed run compiled another graph (another amp level, say).
std::string SupersededGraphMetaFileName(absl::string_view prefix, int rank,
                                        absl::string_view fingerprint);
// "{prefix}-{epoch}_{step}.manifest"
std::string ManifestFileName(absl::string_view prefix, int64_t epoch, int64_t step_in_epoch);

struct ParsedName {
  std::string prefix;
  int rank = -1;  // -1 for a manifest
  int64_t epoch = 0;
  int64_t step_in_epoch = 0;
};
// The parts of a checkpoint or manifest file name; nullopt for any other name.
std::optional<ParsedName> ParseCheckpointFileName(absl::string_view name);
std::optional<ParsedName> ParseManifestFileName(absl::string_view name);

}  // namespace lockstep::ckpt
