#include "train/checkpoint_callback.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "ckpt/naming.h"
#include "core/host_name.h"
#include "core/logging.h"
#include "graph/serialize.h"
#include "parallel/agree.h"
#include "train/model.h"
#include "train/passes/accumulate_gradients.h"

namespace lockstep::train {
namespace {

// What each rank tells the others after its save: (bytes, crc32).
constexpr int64_t kRecordFields = 2;

// `value` reduced over the ranks.
absl::StatusOr<int64_t> AllReduceInt(int64_t value, parallel::ReduceOp op,
                                     parallel::Communicator& world) {
  Tensor tensor = Tensor::Empty({1}, DType::kI64);
  *tensor.data<int64_t>() = value;
  LS_RETURN_IF_ERROR(world.AllReduce(tensor, op));
  return *tensor.data<int64_t>();
}

// Rank 0's `bytes` on every rank (the others pass none).
absl::StatusOr<std::string> BroadcastFromRankZero(const std::string& bytes,
                                                  parallel::Communicator& world) {
  Tensor size = Tensor::Empty({1}, DType::kI64);
  *size.data<int64_t>() = static_cast<int64_t>(bytes.size());
  LS_RETURN_IF_ERROR(world.Broadcast(size, 0));
  const int64_t n = *size.data<int64_t>();
  Tensor data = Tensor::Zeros({std::max<int64_t>(n, 1)}, DType::kU8);
  if (world.rank() == 0) std::memcpy(data.raw_data(), bytes.data(), n);
  LS_RETURN_IF_ERROR(world.Broadcast(data, 0));
  return std::string(static_cast<const char*>(data.raw_data()), n);
}

// This rank's resumable steps, each checked as lockstep-ckpt verify checks it
// (CheckpointManager::Validate) when first asked for, newest first: a step older than the newest
// valid one is read only when another rank lacks the newer. What was rejected, and why, is kept.
class ValidSteps {
 public:
  ValidSteps(const ckpt::CheckpointManager& manager, std::vector<ckpt::proto::Manifest> steps,
             std::vector<std::string> rejected)
      : manager_(manager),
        steps_(std::move(steps)),
        valid_(steps_.size()),
        rejected_(std::move(rejected)) {}

  // The newest valid step at or before global step `bound`; null when there is none.
  const ckpt::proto::Manifest* NewestUpTo(int64_t bound) {
    for (size_t i = steps_.size(); i-- > 0;) {
      if (steps_[i].global_step() > bound) continue;
      if (!valid_[i].has_value()) {
        const absl::Status status = manager_.Validate(steps_[i]);
        valid_[i] = status.ok();
        if (!status.ok()) rejected_.emplace_back(status.message());
      }
      if (*valid_[i]) return &steps_[i];
    }
    return nullptr;
  }
  // Whether the directory holds steps of the prefix, valid or not.
  bool any() const { return !steps_.empty() || !rejected_.empty(); }
  // "step 10: rank 0: ...; step 8: ..."
  std::string Rejected() const { return absl::StrJoin(rejected_, "; "); }

 private:
  const ckpt::CheckpointManager& manager_;
  std::vector<ckpt::proto::Manifest> steps_;  // oldest first
  std::vector<std::optional<bool>> valid_;    // per step; unset until checked
  std::vector<std::string> rejected_;
};

// Why this rank has no step in common with the others.
std::string NoCommonStep(ValidSteps& steps, const std::string& directory) {
  const ckpt::proto::Manifest* newest = steps.NewestUpTo(std::numeric_limits<int64_t>::max());
  if (newest == nullptr) {
    return steps.any() ? absl::StrCat("no valid step in ", directory, ": ", steps.Rejected())
                       : absl::StrCat("no complete step in ", directory);
  }
  const std::string rejected = steps.Rejected();
  return absl::StrCat("newest complete step ", newest->global_step(), " in ", directory,
                      rejected.empty() ? "" : absl::StrCat(" (rejected: ", rejected, ")"));
}

// The newest valid step that every rank has; null when no rank has any step of the prefix,
// valid or not. Each round takes the least of the ranks' newest valid steps up to the last
// round's, until every rank has it. Ranks with steps but none in common get one agreed error
// listing what each rejected and why.
absl::StatusOr<const ckpt::proto::Manifest*> NewestCommonStep(ValidSteps& steps,
                                                              parallel::Communicator& world,
                                                              const std::string& directory) {
  int64_t common = std::numeric_limits<int64_t>::max();
  while (true) {
    const ckpt::proto::Manifest* mine = steps.NewestUpTo(common);
    LS_ASSIGN_OR_RETURN(
        const int64_t least,
        AllReduceInt(mine == nullptr ? -1 : mine->global_step(), parallel::ReduceOp::kMin, world));
    if (least == common) return mine;
    if (least < 0) break;
    common = least;
  }
  LS_ASSIGN_OR_RETURN(const int64_t held,
                      AllReduceInt(steps.any() ? 1 : 0, parallel::ReduceOp::kMax, world));
  if (held == 0) return nullptr;
  return parallel::AgreeAcrossRanks(absl::FailedPreconditionError(NoCommonStep(steps, directory)),
                                    world, "no checkpoint step is complete on every rank");
}

// Rank 0 names the steps the ranks rejected, once, before resuming `step`.
absl::Status ReportRejected(const ValidSteps& steps, const ckpt::proto::Manifest& step,
                            parallel::Communicator& world, const std::string& directory) {
  const std::string rejected = steps.Rejected();
  const absl::Status agreed = parallel::AgreeAcrossRanks(
      rejected.empty() ? absl::OkStatus() : absl::DataLossError(rejected), world);
  if (agreed.ok()) return absl::OkStatus();
  if (!parallel::IsAgreedError(agreed)) return agreed;  // the collective failed
  if (world.rank() == 0) {
    LS_LOG(Warning) << "resuming step " << step.global_step() << " in " << directory
                    << "; rejected: " << agreed.message();
  }
  return absl::OkStatus();
}

// The directory to resume from must exist: a mistyped one is not a fresh start.
absl::Status CheckDirectory(const std::string& directory) {
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(directory, error);
  if (error && error != std::errc::no_such_file_or_directory) {
    return absl::UnavailableError(absl::StrCat("the checkpoint directory to resume from, ",
                                               directory, ": ", error.message()));
  }
  if (!std::filesystem::exists(status)) {
    return absl::NotFoundError(
        absl::StrCat("the checkpoint directory to resume from, ", directory, ", does not exist"));
  }
  if (!std::filesystem::is_directory(status)) {
    return absl::FailedPreconditionError(absl::StrCat("the checkpoint directory to resume from, ",
                                                      directory, ", is not a directory"));
  }
  return absl::OkStatus();
}

// Rank 0's "host:pid:start time", the same on every rank of the job and in every call.
absl::StatusOr<std::string> JobId(parallel::Communicator& world) {
  static const int64_t started_ns = absl::GetCurrentTimeNanos();
  const std::string mine =
      world.rank() == 0 ? absl::StrCat(HostName(), ":", getpid(), ":", started_ns) : "";
  return BroadcastFromRankZero(mine, world);
}

// A rank that found the lock of `directory` held: held by this job (a rank sharing the
// directory took it) or refused, naming the other job's host and pid.
absl::Status CheckHeldByJob(const std::string& directory, const std::string& job) {
  LS_ASSIGN_OR_RETURN(ckpt::LockHolder holder, ckpt::DirectoryLock::ReadHolder(directory));
  if (holder.job == job) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      directory, " is being written by another job (", ckpt::DescribeHolder(holder),
      "): the two jobs' checkpoints would mix; wait for it to end, or write elsewhere"));
}

absl::Status CheckCompiled(const Model& model) {
  if (model.train_executor() == nullptr) {
    return absl::FailedPreconditionError("checkpointing a model that is not compiled yet");
  }
  return absl::OkStatus();
}

// Plain copies of every parameter and state input of the training graph, by name, and the data
// position's scalars. Gradient accumulators are saved empty: a save comes only after an update,
// when each rank's accumulator holds its own gradients of no further use (the next micro-batch
// starts it over), so every rank's file holds the same bytes.
absl::StatusOr<ckpt::RankState> ModelState(const Model& model) {
  LS_RETURN_IF_ERROR(CheckCompiled(model));
  std::set<std::string> accumulators;
  for (const ParameterSpec& spec : model.parameters()) {
    accumulators.insert(AccumulatorName(spec.name));
  }
  ckpt::RankState state;
  const Graph& graph = model.train_executor()->graph();
  for (InputRole role : {InputRole::kParameter, InputRole::kState}) {
    for (const Node* input : graph.InputNodes(role)) {
      LS_ASSIGN_OR_RETURN(Tensor tensor, model.Variable(input->name));
      if (accumulators.contains(input->name))
        tensor = Tensor::Zeros(tensor.shape(), tensor.dtype());
      state.tensors.push_back({input->name, std::move(tensor)});
    }
  }
  state.scalars = {{kDataEpochName, 0}, {kDataBatchName, 0}};
  return state;
}

}  // namespace

ModelCheckpoint::ModelCheckpoint(ckpt::CheckpointConfig config, std::string prefix,
                                 std::shared_ptr<parallel::Communicator> world,
                                 SaveErrorPolicy on_save_error)
    : world_(std::move(world)),
      config_(std::move(config)),
      prefix_(std::move(prefix)),
      on_save_error_(on_save_error) {}

absl::Status ModelCheckpoint::OnTrainBegin(Model& model) {
  if (!fingerprint_.empty()) return absl::OkStatus();
  LS_RETURN_IF_ERROR(CheckCompiled(model));
  if (world_ == nullptr) world_ = model.HostWorld();
  if (!model.run_id().has_value()) {
    LS_ASSIGN_OR_RETURN(std::string job, JobId(*world_));
    model.set_run_id(std::move(job));
  }
  manager_.emplace(config_, prefix_, world_->rank(), world_->size(), *model.run_id());
  LS_ASSIGN_OR_RETURN(
      lock_, LockCheckpointDirectory(config_.directory, manager_->SavesOnThisRank(), *world_));
  LS_RETURN_IF_ERROR(parallel::AgreeAcrossRanks(
      manager_->SavesOnThisRank() ? manager_->BeginRun() : absl::OkStatus(), *world_));
  const Graph& graph = model.train_executor()->graph();
  LS_RETURN_IF_ERROR(manager_->SaveGraphMeta(ToProto(graph)));
  fingerprint_ = Fingerprint(graph);
  return absl::OkStatus();
}

absl::Status ModelCheckpoint::OnStepEnd(Model& model, const StepInfo& step) {
  LS_RETURN_IF_ERROR(OnTrainBegin(model));  // once, when Train did not call it
  // With gradient accumulation only the micro-batch that updates ends a step; the gradients
  // summed before it are not part of a checkpoint.
  mid_accumulation_ = model.global_step() != step.global_step;
  if (mid_accumulation_ ||
      !manager_->ShouldSave(step.global_step, step.epoch, /*epoch_end=*/false)) {
    return absl::OkStatus();
  }
  // The epoch's last step resumes at the next epoch's start. Its files are written once: were
  // they rewritten at the epoch's end under the manifest of their first version, a rank dying
  // midway would leave the ranks resuming from different data positions.
  if (step.last_in_epoch) return Save(model, step.epoch, step.step, step.epoch, 0);
  return Save(model, step.epoch, step.step, step.epoch - 1, step.step);
}

absl::Status ModelCheckpoint::OnEpochEnd(Model& model, const EpochInfo& epoch) {
  LS_RETURN_IF_ERROR(OnTrainBegin(model));  // once, when Train did not call it
  if (mid_accumulation_ || last_saved_step_ == model.global_step() ||
      !manager_->ShouldSave(model.global_step(), epoch.epoch, /*epoch_end=*/true)) {
    return absl::OkStatus();
  }
  return Save(model, epoch.epoch, epoch.first_step + epoch.steps, epoch.epoch, 0);
}

absl::Status ModelCheckpoint::Save(Model& model, int64_t epoch, int64_t step_in_epoch,
                                   int64_t data_epoch, int64_t data_batch) {
  LS_RETURN_IF_ERROR(OnTrainBegin(model));
  LS_RETURN_IF_ERROR(model.AgreeRunningStatistics().status());  // every rank saves one model
  LS_ASSIGN_OR_RETURN(ckpt::RankState state, ModelState(model));
  state.epoch = epoch;
  state.global_step = model.global_step();
  state.step_in_epoch = step_in_epoch;
  state.scalars = {{kDataEpochName, data_epoch}, {kDataBatchName, data_batch}};
  absl::StatusOr<ckpt::WrittenFile> written =
      manager_->SavesOnThisRank() ? manager_->Save(state) : ckpt::WrittenFile{};
  absl::Status committed = CommitOnRankZero(state, written);
  if (!committed.ok() && parallel::IsAgreedError(committed) &&
      on_save_error_ == SaveErrorPolicy::kContinue) {
    if (world_->rank() == 0) LS_LOG(Warning) << committed.message() << "; training goes on";
    return absl::OkStatus();
  }
  LS_RETURN_IF_ERROR(committed);
  last_saved_step_ = state.global_step;
  return manager_->SavesOnThisRank() ? manager_->Prune() : absl::OkStatus();
}

absl::Status ModelCheckpoint::CommitOnRankZero(const ckpt::RankState& state,
                                               const absl::StatusOr<ckpt::WrittenFile>& written) {
  const int ranks = world_->size();
  LS_RETURN_IF_ERROR(parallel::AgreeAcrossRanks(
      written.status(), *world_,
      absl::StrCat("checkpoint step ", state.global_step, " not saved")));
  Tensor record = Tensor::Empty({kRecordFields}, DType::kI64);
  record.data<int64_t>()[0] = static_cast<int64_t>(written->bytes);
  record.data<int64_t>()[1] = written->crc32;
  Tensor records = Tensor::Empty({ranks, kRecordFields}, DType::kI64);
  LS_RETURN_IF_ERROR(Annotate(world_->AllGather(record, records),
                              absl::StrCat("gathering checkpoint step ", state.global_step)));
  const int64_t* all = records.data<int64_t>();
  // Rank 0 commits and sends the manifest (none when it failed) to the others, which copy it
  // where they do not see it (no shared file system). They wait for it and for the outcome, so
  // no rank runs ahead of the manifest.
  absl::Status committed;
  std::string manifest;  // serialized
  if (world_->rank() == 0) {
    std::vector<ckpt::WrittenFile> files;
    const int saving_ranks = manager_->config().all_ranks ? ranks : 1;
    for (int rank = 0; rank < saving_ranks; ++rank) {
      files.push_back({ckpt::CheckpointFileName(prefix_, rank, state.epoch, state.step_in_epoch),
                       static_cast<uint64_t>(all[rank * kRecordFields]),
                       static_cast<uint32_t>(all[rank * kRecordFields + 1])});
    }
    absl::StatusOr<ckpt::proto::Manifest> written = manager_->Commit(state, files, fingerprint_);
    committed = written.status();
    if (written.ok()) manifest = written->SerializeAsString();
  }
  LS_ASSIGN_OR_RETURN(manifest, BroadcastFromRankZero(manifest, *world_));
  if (world_->rank() != 0 && manager_->SavesOnThisRank() && !manifest.empty()) {
    ckpt::proto::Manifest copy;
    committed = copy.ParseFromString(manifest)
                    ? manager_->CopyManifest(copy)
                    : absl::InternalError("rank 0's manifest arrived garbled");
  }
  return parallel::AgreeAcrossRanks(
      committed, *world_, absl::StrCat("checkpoint step ", state.global_step, " not committed"));
}

absl::StatusOr<std::shared_ptr<ckpt::DirectoryLock>> LockCheckpointDirectory(
    const std::string& directory, bool writes_here, parallel::Communicator& world) {
  LS_ASSIGN_OR_RETURN(const std::string job, JobId(world));
  absl::StatusOr<std::shared_ptr<ckpt::DirectoryLock>> lock = nullptr;
  if (writes_here) lock = ckpt::DirectoryLock::TryAcquire(directory, {job, HostName(), getpid()});
  // Agreed before any rank reads the lock file: by then each rank that took it has recorded
  // this job there.
  LS_RETURN_IF_ERROR(parallel::AgreeAcrossRanks(lock.status(), world));
  absl::Status held;
  if (writes_here && *lock == nullptr) held = CheckHeldByJob(directory, job);
  LS_RETURN_IF_ERROR(parallel::AgreeAcrossRanks(held, world));
  return *std::move(lock);
}

absl::StatusOr<bool> ResumeFromCheckpoint(Model& model, const std::string& directory,
                                          const std::string& prefix,
                                          std::shared_ptr<parallel::Communicator> world,
                                          const std::map<std::string, std::string>& recipe) {
  if (world == nullptr) world = model.HostWorld();
  LS_RETURN_IF_ERROR(model.Compile());
  LS_ASSIGN_OR_RETURN(ckpt::RankState state, ModelState(model));
  // Each rank sees its own directory, which may be on a disk of its host alone; errors are
  // agreed before the next collective, so that every rank returns them.
  const ckpt::CheckpointManager manager({.directory = directory}, prefix, world->rank(),
                                        world->size());
  std::vector<std::string> rejected;
  const absl::Status exists = CheckDirectory(directory);
  absl::StatusOr<std::vector<ckpt::proto::Manifest>> listed =
      exists.ok() ? manager.ResumableSteps(&rejected) : exists;
  LS_RETURN_IF_ERROR(parallel::AgreeAcrossRanks(listed.status(), *world));
  ValidSteps steps(manager, *std::move(listed), std::move(rejected));
  LS_ASSIGN_OR_RETURN(const ckpt::proto::Manifest* step,
                      NewestCommonStep(steps, *world, directory));
  if (step == nullptr) return false;
  LS_RETURN_IF_ERROR(ReportRejected(steps, *step, *world, directory));
  LS_RETURN_IF_ERROR(parallel::AgreeAcrossRanks(ckpt::CheckRecipe(*step, recipe), *world));
  LS_RETURN_IF_ERROR(parallel::AgreeAcrossRanks(manager.Resume(*step, &state), *world));
  for (const ckpt::NamedTensor& tensor : state.tensors) {
    LS_RETURN_IF_ERROR(model.SetVariable(tensor.name, tensor.tensor));
  }
  model.SetTrainPosition(state.global_step, state.scalars.at(kDataEpochName),
                         state.scalars.at(kDataBatchName));
  model.set_run_id(step->run_id());
  LS_ASSIGN_OR_RETURN(const bool disagreed, model.AgreeRunningStatistics());
  if (disagreed && world->rank() == 0) {
    LS_LOG(Info) << "step " << step->global_step()
                 << " holds each rank's own batch-norm running statistics (saved before the ranks "
                    "agreed them); resuming with their mean over the ranks";
  }
  return true;
}

}  // namespace lockstep::train
