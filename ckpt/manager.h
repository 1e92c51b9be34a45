#pragma once

// Checkpointing during training, as MindSpore's ModelCheckpoint does it: when to save, per-rank
// files named as MindSpore names them, the graph .meta once per run, the oldest files deleted
// beyond keep_checkpoint_max, a manifest from rank 0 once every saving rank is done, and resume
// from the newest complete step. There is no communication here: the trainer runs the barrier
// and gathers the ranks' WrittenFiles for rank 0.

#include <cstdint>
#include <string>
#include <vector>

#include "ckpt/manifest.h"
#include "ckpt/rank_state.h"
#include "ckpt/writer.h"
#include "core/status.h"
#include "graph/graph.pb.h"

namespace lockstep::ckpt {

struct CheckpointConfig {
  int64_t save_checkpoint_steps = 1;   // every N global steps; 0: not by steps
  int64_t save_checkpoint_epochs = 0;  // at the end of every N epochs; 0: not by epochs
  int keep_checkpoint_max = 5;         // steps kept per rank, oldest deleted; 0 keeps all
  bool all_ranks = true;               // false: rank 0 alone saves (data-parallel replicas)
  std::string directory = ".";
  WriteOptions write;
};

class CheckpointManager {
 public:
  CheckpointManager(CheckpointConfig config, std::string prefix, int rank, int world_size)
      : config_(std::move(config)),
        prefix_(std::move(prefix)),
        rank_(rank),
        world_size_(world_size) {}

  bool SavesOnThisRank() const { return config_.all_ranks || rank_ == 0; }
  // Whether the step that just ended (global step, 1-based epoch) is a checkpoint step.
  bool ShouldSave(int64_t global_step, int64_t epoch, bool epoch_end) const;

  // Once per run, on saving ranks: DIR/{prefix}_{rank}-graph.meta.
  absl::Status SaveGraphMeta(const lockstep::proto::GraphDef& graph) const;
  // This rank's DIR/{prefix}_{rank}-{epoch}_{step}.ckpt; then deletes this rank's oldest steps
  // beyond keep_checkpoint_max (rank 0 deletes their manifests first).
  absl::StatusOr<WrittenFile> Save(const RankState& state) const;
  // Rank 0, once every saving rank's Save returned (`files[i]` is rank i's): writes the manifest
  // that makes the step complete. `rank_local` names tensors that differ across ranks.
  absl::Status Commit(const RankState& state, const std::vector<WrittenFile>& files,
                      const std::string& graph_fingerprint,
                      const std::vector<std::string>& rank_local = {}) const;
  // Restores `state` from the newest complete step; false when there is none to resume from.
  absl::StatusOr<bool> Resume(RankState* state) const;

  const CheckpointConfig& config() const { return config_; }

 private:
  absl::Status CheckNoOtherModelOnly() const;
  absl::Status Prune() const;

  CheckpointConfig config_;
  std::string prefix_;
  int rank_;
  int world_size_;
};

}  // namespace lockstep::ckpt
