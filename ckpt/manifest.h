#pragma once

// The manifest of a checkpoint step (ckpt/manifest.proto, stored as JSON): rank 0 writes it once
// every saving rank has written its file, and ranks on disks of their own keep a copy, so a step
// with a manifest is complete. Resume takes the newest complete step.

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "ckpt/manifest.pb.h"
#include "core/status.h"

namespace lockstep::ckpt {

inline constexpr int kManifestVersion = 1;

// Writes `manifest` atomically as DIR/{prefix}-{epoch}_{step}.manifest, through that path +
// `tmp_suffix`; returns the path.
absl::StatusOr<std::string> WriteManifest(const std::string& dir, const proto::Manifest& manifest,
                                          absl::string_view tmp_suffix = ".tmp");
absl::StatusOr<proto::Manifest> ReadManifest(const std::string& path);

// Every manifest in `dir` (of `prefix`; of any prefix when it is empty), oldest step first. One
// that cannot be read fails the listing, or, given `unreadable`, is left out and its error added
// there.
absl::StatusOr<std::vector<proto::Manifest>> ListManifests(
    const std::string& dir, absl::string_view prefix,
    std::vector<std::string>* unreadable = nullptr);

// The problem that makes `file` unusable: missing from `dir`, or not of the manifest's size;
// none when it is there. Cheap: reads no file.
std::optional<std::string> MissingFile(const std::string& dir, const proto::RankFile& file);
// The problems of every file of the step (MissingFile); empty when every file is there.
std::vector<std::string> MissingFiles(const std::string& dir, const proto::Manifest& manifest);

// The newest step of `prefix` whose files are all present; NotFound when there is none.
absl::StatusOr<proto::Manifest> LatestCompleteStep(const std::string& dir,
                                                   absl::string_view prefix);

// The file `rank` resumes from: its own, or rank 0's when only rank 0 saved; a rank beyond the
// saved world size takes saved rank (rank mod world_size)'s (replicas hold the same parameters).
absl::StatusOr<proto::RankFile> FileForRank(const proto::Manifest& manifest, int rank);

}  // namespace lockstep::ckpt
