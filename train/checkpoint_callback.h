#pragma once

// Checkpoints while training, as MindSpore's ModelCheckpoint callback, and resume.
//
//   auto checkpoint = std::make_shared<ModelCheckpoint>(
//       ckpt::CheckpointConfig{.save_checkpoint_steps = 100, .directory = dir}, "resnet50");
//   LS_ASSIGN_OR_RETURN(bool resumed, ResumeFromCheckpoint(model, dir, "resnet50"));
//   LS_RETURN_IF_ERROR(model.Train(epochs - model.epochs_done(), data, {checkpoint}));
//
// A checkpoint holds every parameter and state input of the training graph by name (weights,
// batch-norm running statistics, "moments.<param>"), epoch_num and step_num, and the data
// position, so that a resumed run continues at the next batch and ends bit for bit where an
// uninterrupted one does.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ckpt/lock.h"
#include "ckpt/manager.h"
#include "parallel/communicator.h"
#include "train/callbacks.h"

namespace lockstep::train {

// The data position: the 0-based epoch the next batch comes from and the batches of it that
// training has consumed.
inline constexpr char kDataEpochName[] = "data_epoch";
inline constexpr char kDataBatchName[] = "data_batch";

// Saves {prefix}_{rank}-{epoch}_{step}.ckpt on the steps and epoch ends the config asks for
// (with gradient accumulation, only at updates), and {prefix}_{rank}-graph.meta once. Before a
// save the ranks agree their running statistics (Model::AgreeRunningStatistics), so that every
// rank's file holds the same model, tensor for tensor. The ranks
// then allgather what they wrote; rank 0 writes the manifest that makes the step complete and
// broadcasts it, and the other saving ranks copy it where their directory lacks it (hosts that
// share no file system); the outcome is agreed, so no rank runs ahead of it. A save that fails
// on any rank (no space, permission, quota) is agreed across the ranks, naming the rank, path
// and reason; no manifest is written, so the previous complete step stays the one a resume
// picks. Then training stops on every rank, or, with SaveErrorPolicy::kContinue, rank 0 warns
// and training goes on. When training begins it takes the directory's lock
// (LockCheckpointDirectory): a second job writing there is refused. The directory holds one run
// (ckpt::CheckpointManager): a fresh model's checkpoints start a run with the job's id, a resumed
// model's continue the run it resumed (Model::run_id); a directory with complete steps of another
// run is refused, and pruning to keep_checkpoint_max removes only this run's steps.
enum class SaveErrorPolicy { kStop, kContinue };

class ModelCheckpoint : public Callback {
 public:
  // `world` is the host communicator of the ranks; null takes the model's (Model::HostWorld)
  // when training begins.
  ModelCheckpoint(ckpt::CheckpointConfig config, std::string prefix,
                  std::shared_ptr<parallel::Communicator> world = nullptr,
                  SaveErrorPolicy on_save_error = SaveErrorPolicy::kStop);

  absl::Status OnTrainBegin(Model& model) override;
  absl::Status OnStepEnd(Model& model, const StepInfo& step) override;
  absl::Status OnEpochEnd(Model& model, const EpochInfo& epoch) override;

 private:
  // Saves this rank's state at the end of `epoch`'s step `step_in_epoch`; the data position
  // (data_epoch, data_batch) is where the next batch comes from.
  absl::Status Save(Model& model, int64_t epoch, int64_t step_in_epoch, int64_t data_epoch,
                    int64_t data_batch);
  // Gathers every rank's file record, has rank 0 commit the step and the others copy its
  // manifest.
  absl::Status CommitOnRankZero(const ckpt::RankState& state,
                                const absl::StatusOr<ckpt::WrittenFile>& written);

  std::shared_ptr<parallel::Communicator> world_;
  ckpt::CheckpointConfig config_;
  std::string prefix_;
  std::optional<ckpt::CheckpointManager> manager_;  // made when training begins, for world_
  SaveErrorPolicy on_save_error_;
  std::string fingerprint_;                    // of the training graph
  int64_t last_saved_step_ = -1;               // global step
  bool mid_accumulation_ = false;              // the last micro-batch did not update
  std::shared_ptr<ckpt::DirectoryLock> lock_;  // of config_.directory, on the ranks that took it
};

// Refuses a second job writing checkpoints into `directory` (created where missing), naming the
// other job's host and pid; the error is agreed across the ranks. Each rank that `writes_here`
// tries the directory's lock: one that takes it records this job (rank 0's host, pid and start
// time) in it; one that finds it held goes on when the holder is a rank of this job (a shared
// directory), else fails. The lock lasts while a returned pointer does (null on the ranks that
// did not take it) and ends with the process, however it ends. Taking it again in the same
// process for the same job returns the lock held. ModelCheckpoint takes it when training begins;
// a binary takes it first to resume from the directory it writes.
absl::StatusOr<std::shared_ptr<ckpt::DirectoryLock>> LockCheckpointDirectory(
    const std::string& directory, bool writes_here, parallel::Communicator& world);

// Restores `model` (compiling it first) from the newest complete step of `prefix` that every
// rank finds in its `directory` (a shared one, or each host's own disk) and that passes the
// checks of lockstep-ckpt verify (ckpt::CheckStep: the manifest, the graph .meta, the rank's
// file whole): parameters, state, moments, the global step, the epochs done and the data
// position. Train then continues that epoch at the next batch; run it for the epochs that remain
// (total - model.epochs_done()). False, with the model untouched, when the directory holds no
// manifest of `prefix`. Errors are agreed across the ranks: a missing `directory`; steps of
// `prefix` but none valid on every rank, listing each rejected one and why. Rank 0 names the
// steps rejected when it resumes an older one. A step whose ranks saved different running
// statistics (written before the ranks agreed them) resumes with their mean, as rank 0 says in
// one line. `world` as for ModelCheckpoint.
// `recipe`: the settings the resumed step must have been trained with (ckpt::CheckRecipe), else
// an agreed error naming them.
absl::StatusOr<bool> ResumeFromCheckpoint(Model& model, const std::string& directory,
                                          const std::string& prefix,
                                          std::shared_ptr<parallel::Communicator> world = nullptr,
                                          const std::map<std::string, std::string>& recipe = {});

}  // namespace lockstep::train
