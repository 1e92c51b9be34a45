#include "ckpt/inspect.h"

#include <google/protobuf/util/message_differencer.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_join.h"
#include "ckpt/manifest.h"

namespace lockstep::ckpt {
namespace {

constexpr int kMaxNamesListed = 5;

int64_t ElementCount(const Entry& entry) {
  return static_cast<int64_t>(entry.content.size() / entry.type->size);
}

double ElementAt(const Entry& entry, int64_t i) {
  return entry.type->load(entry.content.data() + i * entry.type->size);
}

std::string Describe(const Entry& entry) {
  return absl::StrCat(entry.type->name, ShapeToString(entry.shape));
}

// "a", "b", ... and N more.
std::string ListNames(const std::vector<std::string>& names) {
  std::vector<std::string> shown(names.begin(),
                                 names.begin() + std::min<size_t>(names.size(), kMaxNamesListed));
  std::string list = absl::StrJoin(shown, ", ");
  if (names.size() > shown.size())
    absl::StrAppend(&list, " and ", names.size() - shown.size(), " more");
  return list;
}

// Every tensor of `other` must equal rank 0's, bit for bit, but the rank-local ones.
void CompareReplica(const CheckpointData& rank0, const CheckpointData& other, int rank,
                    const proto::Manifest& manifest, std::vector<std::string>* problems) {
  const std::set<std::string> local(manifest.rank_local().begin(), manifest.rank_local().end());
  std::vector<std::string> differ;
  for (const TensorDiff& diff : DiffCheckpoints(rank0, other)) {
    if (local.contains(diff.name)) continue;
    const Entry* a = rank0.Find(diff.name);
    const Entry* b = other.Find(diff.name);
    if (!diff.problem.empty()) {
      differ.push_back(absl::StrCat("'", diff.name, "' (", diff.problem, ")"));
    } else if (a->content != b->content) {
      differ.push_back(absl::StrCat("'", diff.name, "' (max abs diff ", diff.max_abs, ")"));
    }
  }
  if (!differ.empty()) {
    problems->push_back(absl::StrCat("rank ", rank, " differs from rank 0 in ", differ.size(),
                                     " tensor(s): ", ListNames(differ)));
  }
}

}  // namespace

TensorStats ComputeStats(const Entry& entry) {
  TensorStats stats;
  double sum = 0.0;
  stats.min = HUGE_VAL;
  stats.max = -HUGE_VAL;
  const int64_t n = ElementCount(entry);
  for (int64_t i = 0; i < n; ++i) {
    const double x = ElementAt(entry, i);
    if (std::isnan(x)) {
      ++stats.nan_count;
      continue;
    }
    ++stats.count;
    sum += x;
    stats.min = std::min(stats.min, x);
    stats.max = std::max(stats.max, x);
  }
  if (stats.count == 0) return TensorStats{.nan_count = stats.nan_count};
  stats.mean = sum / stats.count;
  double squares = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = ElementAt(entry, i);
    if (!std::isnan(x)) squares += (x - stats.mean) * (x - stats.mean);
  }
  stats.std = std::sqrt(squares / stats.count);
  return stats;
}

TensorDiff DiffEntries(const Entry& a, const Entry& b) {
  TensorDiff diff{.name = a.name};
  if (a.type != b.type || a.shape != b.shape) {
    diff.problem = absl::StrCat(Describe(a), " against ", Describe(b));
    return diff;
  }
  if (a.content == b.content) return diff;
  if (!a.type->numeric()) {
    diff.problem = "the text differs";
    return diff;
  }
  const int64_t n = ElementCount(a);
  for (int64_t i = 0; i < n; ++i) {
    const double x = ElementAt(a, i);
    const double y = ElementAt(b, i);
    if (x == y || (std::isnan(x) && std::isnan(y))) continue;
    const double abs = std::isnan(x - y) ? HUGE_VAL : std::fabs(x - y);
    const double rel = std::isfinite(abs) ? abs / std::max(std::fabs(x), std::fabs(y)) : HUGE_VAL;
    diff.max_abs = std::max(diff.max_abs, abs);
    diff.max_rel = std::max(diff.max_rel, rel);
  }
  return diff;
}

std::vector<TensorDiff> DiffCheckpoints(const CheckpointData& a, const CheckpointData& b) {
  std::vector<TensorDiff> diffs;
  for (const Entry& entry : a.entries) {
    const Entry* other = b.Find(entry.name);
    if (other == nullptr) {
      diffs.push_back({.name = entry.name, .problem = absl::StrCat("only in ", a.path)});
    } else {
      diffs.push_back(DiffEntries(entry, *other));
    }
  }
  for (const Entry& entry : b.entries) {
    if (a.Find(entry.name) == nullptr) {
      diffs.push_back({.name = entry.name, .problem = absl::StrCat("only in ", b.path)});
    }
  }
  return diffs;
}

absl::StatusOr<proto::Manifest> FindManifest(const std::vector<std::string>& dirs,
                                             const std::string& prefix,
                                             std::optional<int64_t> global_step) {
  std::vector<std::pair<std::string, proto::Manifest>> manifests;  // (dir, manifest)
  for (const std::string& dir : dirs) {
    LS_ASSIGN_OR_RETURN(std::vector<proto::Manifest> found, ListManifests(dir, prefix));
    for (proto::Manifest& manifest : found) manifests.emplace_back(dir, std::move(manifest));
  }
  std::set<std::string> prefixes;
  std::set<int64_t> steps;
  for (const auto& [dir, manifest] : manifests) {
    prefixes.insert(manifest.prefix());
    steps.insert(manifest.global_step());
  }
  const std::string where = absl::StrJoin(dirs, ", ");
  if (manifests.empty()) {
    return absl::NotFoundError(absl::StrCat("no manifest in ", where, ": no step is complete"));
  }
  if (prefixes.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, " hold", dirs.size() > 1 ? "" : "s", " checkpoints of several prefixes (",
        absl::StrJoin(prefixes, ", "), "): choose one with --prefix"));
  }
  const int64_t step = global_step.value_or(*steps.rbegin());
  if (!steps.contains(step)) {
    return absl::NotFoundError(absl::StrCat("no manifest of step ", step, " in ", where,
                                            " (complete steps: ", absl::StrJoin(steps, ", "), ")"));
  }
  const std::pair<std::string, proto::Manifest>* chosen = nullptr;
  for (const auto& entry : manifests) {
    if (entry.second.global_step() != step) continue;
    if (chosen == nullptr) {
      chosen = &entry;
    } else if (!google::protobuf::util::MessageDifferencer::Equals(chosen->second, entry.second)) {
      return absl::DataLossError(absl::StrCat("the manifests of step ", step, " in ", chosen->first,
                                              " and ", entry.first, " differ"));
    }
  }
  return chosen->second;
}

absl::StatusOr<proto::Manifest> FindManifest(const std::string& dir, const std::string& prefix,
                                             std::optional<int64_t> global_step) {
  return FindManifest(std::vector<std::string>{dir}, prefix, global_step);
}

VerifyReport VerifyStep(const std::vector<std::string>& dirs, const proto::Manifest& manifest) {
  std::optional<CheckpointData> rank0;  // CheckStep reads the files in rank order
  return CheckStep(dirs, manifest, /*ranks=*/{},
                   [&](const proto::RankFile& file, CheckpointData data, VerifyReport* report) {
                     if (!rank0.has_value() && file.rank() == 0) {
                       rank0 = std::move(data);
                     } else if (rank0.has_value()) {
                       CompareReplica(*rank0, data, file.rank(), manifest, &report->problems);
                     }
                   });
}

VerifyReport VerifyStep(const std::string& dir, const proto::Manifest& manifest) {
  return VerifyStep(std::vector<std::string>{dir}, manifest);
}

}  // namespace lockstep::ckpt
