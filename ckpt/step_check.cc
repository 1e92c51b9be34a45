#include "ckpt/step_check.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "ckpt/graph_meta.h"
#include "ckpt/naming.h"
#include "ckpt/rank_state.h"
#include "core/file_io.h"

namespace lockstep::ckpt {
namespace {

// Ranks named in one problem before "and N more": a corrupt world size may be two billion.
constexpr int kMaxRanksListed = 5;

// The first of `dirs` that holds `name`; none when no directory does.
std::optional<std::string> Locate(const std::vector<std::string>& dirs, const std::string& name) {
  for (const std::string& dir : dirs) {
    std::error_code error;
    if (std::filesystem::exists(JoinPath(dir, name), error)) return dir;
  }
  return std::nullopt;
}

std::string Missing(const std::vector<std::string>& dirs, int rank, const std::string& name) {
  if (dirs.size() == 1)
    return absl::StrCat("rank ", rank, ": ", JoinPath(dirs[0], name), " is missing");
  return absl::StrCat("rank ", rank, ": ", name, " is in none of ", absl::StrJoin(dirs, ", "));
}

void CheckRanks(const proto::Manifest& manifest, std::vector<std::string>* problems) {
  std::set<int> ranks;
  for (const proto::RankFile& file : manifest.files()) {
    if (file.rank() < 0 || file.rank() >= manifest.world_size() ||
        !ranks.insert(file.rank()).second) {
      problems->push_back(
          absl::StrCat("the manifest lists rank ", file.rank(), " out of range or twice"));
      continue;
    }
    // A file of another step (a hand-edited epoch or step) would restore another step's state.
    const std::string expected = CheckpointFileName(manifest.prefix(), file.rank(),
                                                    manifest.epoch(), manifest.step_in_epoch());
    if (file.file() != expected) {
      problems->push_back(absl::StrCat("the manifest's file of rank ", file.rank(), " is ",
                                       file.file(), ", not its step's ", expected));
    }
  }
  const int expected = manifest.all_ranks() ? manifest.world_size() : 1;
  std::vector<std::string> missing;
  for (int rank = 0; rank < expected && std::ssize(missing) < kMaxRanksListed; ++rank) {
    if (!ranks.contains(rank)) missing.push_back(absl::StrCat(rank));
  }
  if (missing.empty()) return;
  const int64_t listed =
      std::count_if(ranks.begin(), ranks.end(), [&](int r) { return r < expected; });
  const int64_t more = expected - listed - static_cast<int64_t>(missing.size());
  problems->push_back(absl::StrCat("the manifest lists no file for rank ",
                                   absl::StrJoin(missing, ", "),
                                   more > 0 ? absl::StrCat(" and ", more, " more") : ""));
}

void CheckManifest(const proto::Manifest& manifest, std::vector<std::string>* problems) {
  if (manifest.world_size() < 1) {
    problems->push_back(absl::StrCat("the manifest's world size is ", manifest.world_size()));
    return;
  }
  CheckRanks(manifest, problems);
}

void CheckMeta(const std::vector<std::string>& dirs, const proto::Manifest& manifest, int rank,
               std::vector<std::string>* problems) {
  if (manifest.graph_fingerprint().empty()) return;
  // A step saved before a resumed run compiled another graph has its graph kept aside.
  const std::string kept =
      SupersededGraphMetaFileName(manifest.prefix(), rank, manifest.graph_fingerprint());
  const std::string name =
      Locate(dirs, kept).has_value() ? kept : GraphMetaFileName(manifest.prefix(), rank);
  const std::optional<std::string> found = Locate(dirs, name);
  if (!found.has_value() && dirs.size() != 1) {
    problems->push_back(Missing(dirs, rank, name));
    return;
  }
  const std::string path = JoinPath(found.value_or(dirs[0]), name);
  absl::StatusOr<lockstep::proto::GraphDef> graph = ReadGraphMeta(path);
  if (!graph.ok()) {
    problems->push_back(absl::StrCat("rank ", rank, ": ", graph.status().message()));
    return;
  }
  GraphSummary summary = SummarizeGraph(*graph);
  if (!summary.fingerprint_matches || summary.fingerprint != manifest.graph_fingerprint()) {
    problems->push_back(absl::StrCat(path, ": graph fingerprint ", summary.fingerprint,
                                     summary.fingerprint_matches ? "" : " (not the graph's own)",
                                     ", the manifest says ", manifest.graph_fingerprint()));
  }
}

void CheckFile(const CheckpointData& data, const proto::Manifest& manifest,
               const proto::RankFile& file, std::vector<std::string>* problems) {
  if (data.stored_crc != file.crc32()) {
    problems->push_back(absl::StrFormat("%s: CRC %08x, the manifest says %08x", data.path,
                                        data.stored_crc, file.crc32()));
  }
  const absl::StatusOr<int64_t> epoch = data.Int64Scalar(kEpochName);
  const absl::StatusOr<int64_t> step = data.Int64Scalar(kStepName);
  if (!epoch.ok() || !step.ok() || *epoch != manifest.epoch() || *step != manifest.global_step()) {
    problems->push_back(absl::StrCat(data.path, ": epoch_num/step_num are not the manifest's ",
                                     manifest.epoch(), "/", manifest.global_step()));
  }
}

}  // namespace

VerifyReport CheckStep(const std::vector<std::string>& dirs, const proto::Manifest& manifest,
                       const std::vector<int>& ranks, const ReadFileCheck& read_file_check) {
  VerifyReport report;
  CheckManifest(manifest, &report.problems);
  std::vector<proto::RankFile> files;
  for (const proto::RankFile& file : manifest.files()) {
    if (ranks.empty() || std::find(ranks.begin(), ranks.end(), file.rank()) != ranks.end()) {
      files.push_back(file);
    }
  }
  std::sort(files.begin(), files.end(),
            [](const proto::RankFile& a, const proto::RankFile& b) { return a.rank() < b.rank(); });
  for (const proto::RankFile& file : files) {
    CheckMeta(dirs, manifest, file.rank(), &report.problems);
    const std::optional<std::string> dir = Locate(dirs, file.file());
    if (!dir.has_value()) {
      report.problems.push_back(Missing(dirs, file.rank(), file.file()));
      continue;
    }
    const size_t before = report.problems.size();
    if (std::optional<std::string> problem = MissingFile(*dir, file)) {
      report.problems.push_back(*problem);
    }
    const std::string path = JoinPath(*dir, file.file());
    absl::StatusOr<CheckpointData> data = ReadCheckpoint(path);
    if (!data.ok()) {
      report.problems.push_back(absl::StrCat("rank ", file.rank(), ": ", data.status().message()));
      continue;
    }
    CheckFile(*data, manifest, file, &report.problems);
    if (read_file_check) read_file_check(file, std::move(*data), &report);
    if (report.problems.size() == before) report.checked.push_back(path);
  }
  return report;
}

}  // namespace lockstep::ckpt
