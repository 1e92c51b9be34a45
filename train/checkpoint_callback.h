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
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ckpt/manager.h"
#include "parallel/communicator.h"
#include "train/callbacks.h"

namespace lockstep::train {

// The data position: the 0-based epoch the next batch comes from and the batches of it that
// training has consumed.
inline constexpr char kDataEpochName[] = "data_epoch";
inline constexpr char kDataBatchName[] = "data_batch";

// Saves {prefix}_{rank}-{epoch}_{step}.ckpt on the steps and epoch ends the config asks for
// (with gradient accumulation, only at updates), and {prefix}_{rank}-graph.meta once. The ranks
// then allgather what they wrote; rank 0 writes the manifest that makes the step complete and
// broadcasts it, and the other saving ranks copy it where their directory lacks it (hosts that
// share no file system); the outcome is agreed, so no rank runs ahead of it. A save that fails
// on any rank (no space, permission, quota) is agreed across the ranks, naming the rank, path
// and reason; no manifest is written, so the previous complete step stays the one a resume
// picks. Then training stops on every rank, or, with SaveErrorPolicy::kContinue, rank 0 warns
// and training goes on.
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
  std::string fingerprint_;              // of the training graph
  std::vector<std::string> rank_local_;  // state that differs across ranks
  int64_t last_saved_step_ = -1;         // global step
  bool mid_accumulation_ = false;        // the last micro-batch did not update
};

// Restores `model` (compiling it first) from the newest complete step of `prefix` that every
// rank finds in its `directory` (a shared one, or each host's own disk): parameters, state,
// moments, the global step, the epochs done and the data position. Errors are agreed across the
// ranks. Train then continues that epoch at the next batch; run it for the epochs that remain
// (total - model.epochs_done()). False, with the model untouched, when there is no complete step.
// `world` as for ModelCheckpoint.
absl::StatusOr<bool> ResumeFromCheckpoint(Model& model, const std::string& directory,
                                          const std::string& prefix,
                                          std::shared_ptr<parallel::Communicator> world = nullptr);

}  // namespace lockstep::train
