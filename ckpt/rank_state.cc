#include "ckpt/rank_state.h"

#include <cstring>
#include <set>

#include "absl/strings/str_join.h"

namespace lockstep::ckpt {
namespace {

std::string TypeString(const TensorTypeInfo& type, const Shape& shape) {
  return absl::StrCat(type.name, ShapeToString(shape));
}

// The entry `target` is restored from, once its name, dtype and shape are checked.
absl::StatusOr<const Entry*> Match(const CheckpointData& data, const NamedTensor& target) {
  const TensorTypeInfo& want = TensorTypeOf(target.tensor.dtype());
  const Entry* entry = data.Find(target.name);
  if (entry == nullptr) {
    return absl::NotFoundError(absl::StrCat(data.path, ": no tensor '", target.name,
                                            "' (the model expects ",
                                            TypeString(want, target.tensor.shape()), ")"));
  }
  if (entry->type != &want || entry->shape != target.tensor.shape()) {
    return absl::InvalidArgumentError(absl::StrCat(
        data.path, ": tensor '", entry->name, "' is ", TypeString(*entry->type, entry->shape),
        " in the checkpoint but ", TypeString(want, target.tensor.shape()), " in the model"));
  }
  if (target.tensor.device().type != DeviceType::kCPU) {
    return absl::InvalidArgumentError(
        absl::StrCat("restoring '", target.name, "': the target tensor is not on the CPU"));
  }
  return entry;
}

// Values in the file that `state` does not claim.
std::vector<std::string> Unexpected(const CheckpointData& data, const RankState& state) {
  std::set<std::string> claimed = {kEpochName, kStepName};
  for (const NamedTensor& tensor : state.tensors) claimed.insert(tensor.name);
  for (const auto& [name, value] : state.scalars) claimed.insert(name);
  std::vector<std::string> unexpected;
  for (const Entry& entry : data.entries) {
    if (!claimed.contains(entry.name)) unexpected.push_back(absl::StrCat("'", entry.name, "'"));
  }
  for (const std::string& name : data.map_parameters) {
    if (!claimed.contains(name)) unexpected.push_back(absl::StrCat("'", name, "' (MapParameter)"));
  }
  return unexpected;
}

}  // namespace

absl::StatusOr<WrittenFile> SaveRankState(const std::string& path, const RankState& state,
                                          const WriteOptions& options) {
  LS_ASSIGN_OR_RETURN(CheckpointWriter writer, CheckpointWriter::Open(path, options));
  for (const NamedTensor& tensor : state.tensors) {
    LS_RETURN_IF_ERROR(writer.Add(tensor.name, tensor.tensor));
  }
  for (const auto& [name, value] : state.scalars) LS_RETURN_IF_ERROR(writer.AddInt64(name, value));
  LS_RETURN_IF_ERROR(writer.AddInt64(kEpochName, state.epoch));
  LS_RETURN_IF_ERROR(writer.AddInt64(kStepName, state.global_step));
  return writer.Finish();
}

absl::Status RestoreRankState(const CheckpointData& data, RankState* state) {
  std::vector<std::string> unexpected = Unexpected(data, *state);
  if (!unexpected.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        data.path, ": tensors the model does not expect: ", absl::StrJoin(unexpected, ", ")));
  }
  // Everything is checked before anything is written, so a failed restore changes nothing.
  std::vector<const Entry*> sources;
  for (const NamedTensor& tensor : state->tensors) {
    LS_ASSIGN_OR_RETURN(sources.emplace_back(), Match(data, tensor));
  }
  std::map<std::string, int64_t> scalars;
  for (const auto& [name, value] : state->scalars) {
    LS_ASSIGN_OR_RETURN(scalars[name], data.Int64Scalar(name));
  }
  LS_ASSIGN_OR_RETURN(const int64_t epoch, data.Int64Scalar(kEpochName));
  LS_ASSIGN_OR_RETURN(const int64_t global_step, data.Int64Scalar(kStepName));
  for (size_t i = 0; i < sources.size(); ++i) {
    std::memcpy(state->tensors[i].tensor.raw_data(), sources[i]->content.data(),
                sources[i]->content.size());
  }
  state->scalars = std::move(scalars);
  state->epoch = epoch;
  state->global_step = global_step;
  return absl::OkStatus();
}

absl::Status LoadRankState(const std::string& path, RankState* state) {
  LS_ASSIGN_OR_RETURN(CheckpointData data, ReadCheckpoint(path));
  return RestoreRankState(data, state);
}

}  // namespace lockstep::ckpt
