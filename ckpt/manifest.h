#pragma once

// The manifest of a checkpoint step (ckpt/manifest.proto, stored as JSON): rank 0 writes it once
// every saving rank has written its file, so a step with a manifest is complete. Resume takes
// the newest complete step.

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "ckpt/manifest.pb.h"
#include "core/status.h"

namespace lockstep::ckpt {

inline constexpr int kManifestVersion = 1;

// Writes `manifest` atomically as DIR/{prefix}-{epoch}_{step}.manifest; returns the path.
absl::StatusOr<std::string> WriteManifest(const std::string& dir, const proto::Manifest& manifest);
absl::StatusOr<proto::Manifest> ReadManifest(const std::string& path);

// Every manifest in `dir` (of `prefix`; of any prefix when it is empty), oldest step first.
absl::StatusOr<std::vector<proto::Manifest>> ListManifests(const std::string& dir,
                                                           absl::string_view prefix);

// The problems that make the step unusable: files that are missing or whose size differs from
// the manifest's record. Empty when every file is there. Cheap: reads no file.
std::vector<std::string> MissingFiles(const std::string& dir, const proto::Manifest& manifest);

// The newest step of `prefix` whose files are all present; NotFound when there is none.
absl::StatusOr<proto::Manifest> LatestCompleteStep(const std::string& dir,
                                                   absl::string_view prefix);

// The file `rank` resumes from: its own, or rank 0's when only rank 0 saved; a rank beyond the
// saved world size takes saved rank (rank mod world_size)'s (replicas hold the same parameters).
absl::StatusOr<std::string> FileForRank(const proto::Manifest& manifest, int rank);

}  // namespace lockstep::ckpt
