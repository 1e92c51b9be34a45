#pragma once

// What one rank saves at a checkpoint step and restores on resume: named tensors (parameters,
// "moments.<param>", ...), the epoch and global step (MindSpore's epoch_num and step_num), and
// further Int64 scalars (RNG counters, the data position). All are ordinary Values of one .ckpt.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ckpt/reader.h"
#include "ckpt/writer.h"
#include "core/status.h"
#include "core/tensor.h"

namespace lockstep::ckpt {

// MindSpore's names for the epoch and the global step.
inline constexpr char kEpochName[] = "epoch_num";
inline constexpr char kStepName[] = "step_num";

struct NamedTensor {
  std::string name;
  Tensor tensor;  // CPU, plain row-major layout
};

struct RankState {
  int64_t epoch = 0;        // epoch_num (1-based, as MindSpore counts)
  int64_t global_step = 0;  // step_num
  // The {step} of MindSpore's file names; not stored in the file (MindSpore does not either).
  int64_t step_in_epoch = 0;
  // Saved as they are; on load, filled in place (existing tensors of the expected shape/dtype).
  std::vector<NamedTensor> tensors;
  // Saved as Int64 scalars; on load, the keys say what to read and the values are filled in.
  std::map<std::string, int64_t> scalars;
};

absl::StatusOr<WrittenFile> SaveRankState(const std::string& path, const RankState& state,
                                          const WriteOptions& options = {});

// Restores `state` from `data`: every tensor and scalar `state` names must be in the file with
// the same dtype and shape, and every Value in the file must be one of them (or epoch_num or
// step_num); errors name the file, the tensor and both types.
absl::Status RestoreRankState(const CheckpointData& data, RankState* state);
absl::Status LoadRankState(const std::string& path, RankState* state);

}  // namespace lockstep::ckpt
