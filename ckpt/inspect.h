#pragma once

// What lockstep-ckpt reports: statistics of a tensor, differences between two checkpoints, and
// the verification of a saved step across ranks.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ckpt/manifest.h"
#include "ckpt/reader.h"
#include "ckpt/step_check.h"

namespace lockstep::ckpt {

struct TensorStats {
  int64_t count = 0;      // elements that are not NaN
  int64_t nan_count = 0;  // left out of the others
  double min = 0.0;
  double max = 0.0;
  double mean = 0.0;
  double std = 0.0;  // population standard deviation
};
// Of a numeric entry.
TensorStats ComputeStats(const Entry& entry);

struct TensorDiff {
  std::string name;
  // Set when the two cannot be compared element by element (only in one file, another type or
  // shape, different text).
  std::string problem;
  double max_abs = 0.0;  // max |a - b|; NaN against a number counts as infinite
  double max_rel = 0.0;  // max |a - b| / max(|a|, |b|)
  bool Exceeds(double atol) const { return !problem.empty() || max_abs > atol; }
};
TensorDiff DiffEntries(const Entry& a, const Entry& b);
// Every tensor of either file: a's order, then those only in b.
std::vector<TensorDiff> DiffCheckpoints(const CheckpointData& a, const CheckpointData& b);

// The manifest of `global_step` (the newest when unset) among `dirs`: a job's checkpoint
// directory, or the directories gathered from its hosts when they share no file system (each
// holds its ranks' files; rank 0's the manifest). Copies of one step's manifest must agree. With
// an empty prefix the directories must hold manifests of a single prefix.
absl::StatusOr<proto::Manifest> FindManifest(const std::vector<std::string>& dirs,
                                             const std::string& prefix,
                                             std::optional<int64_t> global_step);
absl::StatusOr<proto::Manifest> FindManifest(const std::string& dir, const std::string& prefix,
                                             std::optional<int64_t> global_step);

// Checks a saved step as resume does (CheckStep) for every rank, and that every rank's tensors
// equal rank 0's bit for bit (but the rank_local ones).
VerifyReport VerifyStep(const std::vector<std::string>& dirs, const proto::Manifest& manifest);
VerifyReport VerifyStep(const std::string& dir, const proto::Manifest& manifest);

}  // namespace lockstep::ckpt
