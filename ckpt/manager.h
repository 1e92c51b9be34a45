#pragma once

// Checkpointing during training, as MindSpore's ModelCheckpoint does it: when to save, per-rank
// files named as MindSpore names them, the graph .meta once per run, the oldest files deleted
// beyond keep_checkpoint_max, a manifest from rank 0 once every saving rank is done, and resume
// from a complete step. The ranks need not share a file system: each directory holds its own
// ranks' files and a copy of the manifest. There is no communication here: the trainer gathers
// the ranks' WrittenFiles for rank 0, sends its manifest to the others, and has the ranks agree
// on the step to resume.

#include <cstdint>
#include <map>
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
  // The settings a resume must keep, by flag name, written into every manifest (CheckRecipe).
  std::map<std::string, std::string> recipe;
};

// Refuses to resume `step` with settings other than those it was trained with (its manifest's
// recipe; steps saved before recipes were written pass): one error naming each setting, the
// value asked for and the step's, and why it cannot change mid-run.
absl::Status CheckRecipe(const proto::Manifest& step,
                         const std::map<std::string, std::string>& recipe);

// A checkpoint directory holds one training run of a prefix: the steps a run started fresh
// saved, and those of every job that resumed it (manifest run_id). A run writing there refuses a
// directory that holds another run's complete steps (BeginRun), and prunes only its own steps,
// by their manifests, never by file names: a stray or foreign file is never deleted.
class CheckpointManager {
 public:
  // `run_id` is the run whose steps this manager commits and prunes (see above); resume needs none.
  CheckpointManager(CheckpointConfig config, std::string prefix, int rank, int world_size,
                    std::string run_id = "")
      : config_(std::move(config)),
        prefix_(std::move(prefix)),
        rank_(rank),
        world_size_(world_size),
        run_id_(std::move(run_id)) {}

  bool SavesOnThisRank() const { return config_.all_ranks || rank_ == 0; }
  // Whether the step that just ended (global step, 1-based epoch) is a checkpoint step.
  bool ShouldSave(int64_t global_step, int64_t epoch, bool epoch_end) const;

  // Once per run, on saving ranks: DIR/{prefix}_{rank}-graph.meta.
  absl::Status SaveGraphMeta(const lockstep::proto::GraphDef& graph) const;
  // This rank's DIR/{prefix}_{rank}-{epoch}_{step}.ckpt.
  absl::StatusOr<WrittenFile> Save(const RankState& state) const;
  // On saving ranks, when training begins, before any rank saves or prunes: FailedPrecondition
  // when the directory holds complete steps of the prefix from another run (another run_id),
  // naming the directory, the steps and the choices: resume that run, or write elsewhere.
  // Manifests that cannot be read are not complete steps and do not count. Otherwise remembers
  // the run's steps already there (a resumed run's), which Prune removes in turn.
  absl::Status BeginRun();
  // On saving ranks, once the step every rank saved is committed: deletes this run's oldest
  // steps beyond keep_checkpoint_max, as their manifests name them: the manifest first, then
  // this rank's file (and those of ranks a smaller world no longer has). Not before the commit:
  // with keep_checkpoint_max 1 a rank dying between its save and the commit would leave no complete
  // step.
  absl::Status Prune();
  // Rank 0, once every saving rank's Save returned (`files[i]` is rank i's, as that rank
  // reported it: rank 0 may not see the file): writes the manifest that makes the step complete
  // and returns it. `rank_local` names tensors that differ across ranks.
  absl::StatusOr<proto::Manifest> Commit(const RankState& state,
                                         const std::vector<WrittenFile>& files,
                                         const std::string& graph_fingerprint,
                                         const std::vector<std::string>& rank_local = {}) const;
  // The other saving ranks, once rank 0 committed `manifest`: writes a copy where this rank's
  // directory lacks it (a disk rank 0 does not write to), so that the step is complete there.
  absl::Status CopyManifest(const proto::Manifest& manifest) const;

  // The steps this rank can resume from, oldest first: those with a manifest in its directory
  // and, there, the file it resumes from, of the manifest's size. Resume one that every rank has
  // and Validate passes. `rejected`, when given, gets why the other manifests of the prefix
  // there were left out (unreadable, the file missing or of another size).
  absl::StatusOr<std::vector<proto::Manifest>> ResumableSteps(
      std::vector<std::string>* rejected = nullptr) const;
  // Checks `step` as lockstep-ckpt verify does (CheckStep), for the file this rank resumes from:
  // the manifest, that rank's graph .meta and its file, read whole. The error names the step
  // and every problem found.
  absl::Status Validate(const proto::Manifest& step) const;
  // Restores `state` from `step`, one of ResumableSteps.
  absl::Status Resume(const proto::Manifest& step, RankState* state) const;

  const CheckpointConfig& config() const { return config_; }

 private:
  // Whether this rank removes the files rank `saved_by` saved (Prune).
  bool Removes(int saved_by) const;
  absl::Status CheckNoOtherModelOnly() const;

  CheckpointConfig config_;
  std::string prefix_;
  int rank_;
  int world_size_;
  std::string run_id_;
  std::map<int64_t, proto::Manifest> run_steps_;  // of run_id_ not pruned yet, by global step
};

}  // namespace lockstep::ckpt
