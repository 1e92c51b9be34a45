#include "ckpt/manager.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <utility>

#include "absl/strings/str_join.h"
#include "ckpt/graph_meta.h"
#include "ckpt/naming.h"
#include "ckpt/step_check.h"
#include "core/file_io.h"
#include "core/logging.h"

namespace lockstep::ckpt {

absl::Status CheckRecipe(const proto::Manifest& step,
                         const std::map<std::string, std::string>& recipe) {
  std::vector<std::string> changed;
  for (const auto& [flag, value] : recipe) {
    const auto saved = step.recipe().find(flag);
    if (saved == step.recipe().end() || saved->second == value) continue;
    changed.push_back(
        absl::StrCat(flag, " ", value, " (it was trained with ", flag, " ", saved->second, ")"));
  }
  if (changed.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "resuming step ", step.global_step(), " with ", absl::StrJoin(changed, ", "),
      ": the data position, the learning-rate schedule, the gradient accumulators and the loss "
      "scale's state all count in the run's own settings; resume with its settings, or start a "
      "new run in another directory"));
}

bool CheckpointManager::ShouldSave(int64_t global_step, int64_t epoch, bool epoch_end) const {
  const int64_t steps = config_.save_checkpoint_steps;
  const int64_t epochs = config_.save_checkpoint_epochs;
  return (steps > 0 && global_step % steps == 0) ||
         (epoch_end && epochs > 0 && epoch % epochs == 0);
}

absl::Status CheckpointManager::SaveGraphMeta(const lockstep::proto::GraphDef& graph) const {
  if (!SavesOnThisRank()) return absl::OkStatus();
  LS_RETURN_IF_ERROR(MakeDirectories(config_.directory));
  const std::string path = JoinPath(config_.directory, GraphMetaFileName(prefix_, rank_));
  // The steps saved before with another graph keep theirs, under its fingerprint.
  if (std::filesystem::exists(path)) {
    absl::StatusOr<lockstep::proto::GraphDef> earlier = ReadGraphMeta(path);
    if (earlier.ok() && earlier->fingerprint() != graph.fingerprint()) {
      const std::string kept = JoinPath(
          config_.directory, SupersededGraphMetaFileName(prefix_, rank_, earlier->fingerprint()));
      std::error_code error;
      std::filesystem::rename(path, kept, error);
      if (error) {
        return absl::InternalError(
            absl::StrCat("cannot move ", path, " to ", kept, ": ", error.message()));
      }
    }
  }
  return WriteGraphMeta(path, graph);
}

absl::StatusOr<WrittenFile> CheckpointManager::Save(const RankState& state) const {
  if (!SavesOnThisRank()) {
    return absl::FailedPreconditionError(
        absl::StrCat("rank ", rank_, " saves no checkpoint (all_ranks is off)"));
  }
  LS_RETURN_IF_ERROR(MakeDirectories(config_.directory));
  const std::string path = JoinPath(
      config_.directory, CheckpointFileName(prefix_, rank_, state.epoch, state.step_in_epoch));
  return SaveRankState(path, state, config_.write);
}

absl::Status CheckpointManager::BeginRun() {
  std::vector<std::string> unreadable;  // not complete steps of anyone's
  absl::StatusOr<std::vector<proto::Manifest>> manifests =
      ListManifests(config_.directory, prefix_, &unreadable);
  if (absl::IsNotFound(manifests.status())) return absl::OkStatus();  // no directory yet
  LS_RETURN_IF_ERROR(manifests.status());
  std::vector<int64_t> others;
  for (const proto::Manifest& manifest : *manifests) {
    if (manifest.run_id() != run_id_) others.push_back(manifest.global_step());
  }
  if (!others.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(config_.directory, " holds complete steps of another run of ", prefix_,
                     " (step", others.size() == 1 ? " " : "s ", absl::StrJoin(others, ", "),
                     "): resume that run from it (lockstep-train --resume ", config_.directory,
                     "), or write this one elsewhere; a new run would overwrite its files"));
  }
  for (proto::Manifest& manifest : *manifests) {
    run_steps_[manifest.global_step()] = std::move(manifest);
  }
  return absl::OkStatus();
}

// Its own files, and those of ranks a smaller world no longer has (a step saved before the job
// went on with fewer ranks): rank r takes ranks r + k * world size, where it sees them.
bool CheckpointManager::Removes(int saved_by) const {
  return saved_by == rank_ || (saved_by >= world_size_ && saved_by % world_size_ == rank_);
}

absl::Status CheckpointManager::Prune() {
  if (config_.keep_checkpoint_max <= 0) return absl::OkStatus();
  std::vector<std::string> unreadable;  // never pruned: nothing says what they hold
  LS_ASSIGN_OR_RETURN(std::vector<proto::Manifest> listed,
                      ListManifests(config_.directory, prefix_, &unreadable));
  // The steps of this run seen so far (BeginRun, earlier prunes) and those listed now: on a
  // shared disk another rank may have removed the manifest of a step whose file this rank still
  // has to remove.
  for (proto::Manifest& manifest : listed) {
    if (manifest.run_id() == run_id_) run_steps_[manifest.global_step()] = std::move(manifest);
  }
  while (run_steps_.size() > static_cast<size_t>(config_.keep_checkpoint_max)) {
    const proto::Manifest& oldest = run_steps_.begin()->second;
    // The manifest goes first: a step must never look complete without its files. Every rank
    // removes it, as it may hold its directory's copy (on a shared disk, the others find it gone).
    LS_RETURN_IF_ERROR(RemoveFile(JoinPath(
        config_.directory, ManifestFileName(prefix_, oldest.epoch(), oldest.step_in_epoch()))));
    for (const proto::RankFile& file : oldest.files()) {
      if (Removes(file.rank())) {
        LS_RETURN_IF_ERROR(RemoveFile(JoinPath(config_.directory, file.file())));
      }
    }
    run_steps_.erase(run_steps_.begin());
  }
  return absl::OkStatus();
}

absl::StatusOr<proto::Manifest> CheckpointManager::Commit(
    const RankState& state, const std::vector<WrittenFile>& files,
    const std::string& graph_fingerprint, const std::vector<std::string>& rank_local) const {
  if (rank_ != 0) return absl::FailedPreconditionError("only rank 0 writes the manifest");
  const size_t saving_ranks = config_.all_ranks ? world_size_ : 1;
  if (files.size() != saving_ranks) {
    return absl::InvalidArgumentError(absl::StrCat("manifest of step ", state.global_step, ": ",
                                                   files.size(), " rank files for ", saving_ranks,
                                                   " saving rank(s)"));
  }
  proto::Manifest manifest;
  manifest.set_version(kManifestVersion);
  manifest.set_prefix(prefix_);
  manifest.set_world_size(world_size_);
  manifest.set_all_ranks(config_.all_ranks);
  manifest.set_epoch(state.epoch);
  manifest.set_step_in_epoch(state.step_in_epoch);
  manifest.set_global_step(state.global_step);
  manifest.set_graph_fingerprint(graph_fingerprint);
  manifest.set_run_id(run_id_);
  manifest.mutable_recipe()->insert(config_.recipe.begin(), config_.recipe.end());
  for (size_t rank = 0; rank < files.size(); ++rank) {
    proto::RankFile* file = manifest.add_files();
    file->set_rank(static_cast<int>(rank));
    file->set_file(std::filesystem::path(files[rank].path).filename().string());
    file->set_bytes(files[rank].bytes);
    file->set_crc32(files[rank].crc32);
  }
  for (const std::string& name : rank_local) manifest.add_rank_local(name);
  LS_RETURN_IF_ERROR(WriteManifest(config_.directory, manifest).status());
  return manifest;
}

absl::Status CheckpointManager::CopyManifest(const proto::Manifest& manifest) const {
  const std::string path = JoinPath(
      config_.directory, ManifestFileName(prefix_, manifest.epoch(), manifest.step_in_epoch()));
  std::error_code error;
  if (std::filesystem::exists(path, error)) return absl::OkStatus();  // rank 0's, a shared disk
  // On a shared disk that shows rank 0's copy late (NFS caches), several ranks may write it:
  // each through a tmp file of its own, the same bytes renamed over one name.
  return WriteManifest(config_.directory, manifest, absl::StrCat(".", rank_, ".tmp")).status();
}

// Resuming a directory that holds only another model's checkpoints is a mistake (the wrong
// --model or --resume), not a fresh start.
absl::Status CheckpointManager::CheckNoOtherModelOnly() const {
  std::vector<std::string> unreadable;  // of other prefixes: ResumableSteps counted ours
  absl::StatusOr<std::vector<proto::Manifest>> manifests =
      ListManifests(config_.directory, "", &unreadable);
  if (absl::IsNotFound(manifests.status())) return absl::OkStatus();
  LS_RETURN_IF_ERROR(manifests.status());
  std::set<std::string> others;
  for (const proto::Manifest& manifest : *manifests) {
    if (manifest.prefix() == prefix_) return absl::OkStatus();
    others.insert(manifest.prefix());
  }
  if (others.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      config_.directory, " holds checkpoints of ", absl::StrJoin(others, ", "), ", none of ",
      prefix_, ": resume with the model that wrote them, or from another directory"));
}

absl::StatusOr<std::vector<proto::Manifest>> CheckpointManager::ResumableSteps(
    std::vector<std::string>* rejected) const {
  std::vector<std::string> left_out;
  absl::StatusOr<std::vector<proto::Manifest>> manifests =
      ListManifests(config_.directory, prefix_, &left_out);
  if (absl::IsNotFound(manifests.status())) return std::vector<proto::Manifest>();  // no directory
  LS_RETURN_IF_ERROR(manifests.status());
  std::vector<proto::Manifest> steps;
  for (proto::Manifest& manifest : *manifests) {
    absl::StatusOr<proto::RankFile> file = FileForRank(manifest, rank_);
    std::optional<std::string> problem =
        file.ok() ? MissingFile(config_.directory, *file) : std::string(file.status().message());
    if (problem.has_value()) {
      left_out.push_back(absl::StrCat("step ", manifest.global_step(), ": ", *problem));
    } else {
      steps.push_back(std::move(manifest));
    }
  }
  if (steps.empty() && left_out.empty()) LS_RETURN_IF_ERROR(CheckNoOtherModelOnly());
  if (rejected != nullptr) *rejected = std::move(left_out);
  return steps;
}

absl::Status CheckpointManager::Validate(const proto::Manifest& step) const {
  LS_ASSIGN_OR_RETURN(proto::RankFile file, FileForRank(step, rank_));
  const VerifyReport report = CheckStep({config_.directory}, step, {file.rank()});
  if (report.problems.empty()) return absl::OkStatus();
  return absl::DataLossError(
      absl::StrCat("step ", step.global_step(), ": ", absl::StrJoin(report.problems, "; ")));
}

absl::Status CheckpointManager::Resume(const proto::Manifest& step, RankState* state) const {
  if (step.world_size() != world_size_ && rank_ == 0) {
    LS_LOG(Warning) << "resuming step " << step.global_step() << " saved by " << step.world_size()
                    << " ranks with " << world_size_ << ": the global batch is kept, each rank now "
                    << "takes 1/" << world_size_ << " of it (was 1/" << step.world_size()
                    << "); the parameters are replicated, but the data order changes";
  }
  LS_ASSIGN_OR_RETURN(proto::RankFile file, FileForRank(step, rank_));
  LS_RETURN_IF_ERROR(LoadRankState(JoinPath(config_.directory, file.file()), state));
  state->step_in_epoch = step.step_in_epoch();
  return absl::OkStatus();
}

}  // namespace lockstep::ckpt
