#include "parallel/gpu_assignment.h"

#include <algorithm>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace lockstep::parallel {
namespace {

std::string DescribeView(const RankGpuView& view) {
  std::string line = absl::StrCat("rank ", view.rank, " on ", view.host, " (local rank ",
                                  view.local_rank, " of ", view.local_size, ") sees ");
  if (view.gpus.empty()) return line + "no GPU";
  return absl::StrCat(line, view.gpus.size(),
                      view.gpus.size() == 1 ? " GPU: " : " GPUs: ", absl::StrJoin(view.gpus, ", "));
}

std::string DescribeViews(const std::vector<RankGpuView>& ranks) {
  std::vector<std::string> lines;
  for (const RankGpuView& view : ranks) lines.push_back(DescribeView(view));
  return absl::StrJoin(lines, "; ");
}

// The device index of a rank that sees GPUs, or -1 when neither launcher style fits it.
int PickDevice(const RankGpuView& view, bool share) {
  const int visible = static_cast<int>(view.gpus.size());
  if (visible >= view.local_size) return view.local_rank;  // sees its host's GPUs
  if (visible == 1) return 0;                              // given exactly one
  if (share) return view.local_rank % visible;
  return -1;
}

}  // namespace

absl::StatusOr<GpuAssignment> AssignGpus(const std::vector<RankGpuView>& ranks) {
  std::vector<int> blind;
  for (const RankGpuView& view : ranks) {
    if (view.gpus.empty()) blind.push_back(view.rank);
  }
  if (blind.size() == ranks.size()) return GpuAssignment{};
  if (!blind.empty()) {
    return GpuAssignment{
        .cpu_reason = absl::StrCat(
            "rank", blind.size() == 1 ? " " : "s ", absl::StrJoin(blind, ", "),
            " see no GPU, and NCCL needs one on every rank, so every rank computes on the CPU (",
            DescribeViews(ranks), ")")};
  }
  GpuAssignment assignment;
  const bool share = std::all_of(ranks.begin(), ranks.end(),
                                 [](const RankGpuView& view) { return view.may_share_gpu; });
  std::map<std::string, std::vector<int>> ranks_on_gpu;
  for (const RankGpuView& view : ranks) {
    const int device = PickDevice(view, share);
    if (device < 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot give every rank a GPU of its own: each rank must see all of its host's GPUs "
          "(at least one per rank) or exactly one (CUDA_VISIBLE_DEVICES, srun "
          "--gpus-per-task=1); ",
          DescribeViews(ranks)));
    }
    assignment.device.push_back(device);
    ranks_on_gpu[view.gpus[device]].push_back(view.rank);
  }
  if (share) return assignment;
  for (const auto& [gpu, sharing] : ranks_on_gpu) {
    if (sharing.size() < 2) continue;
    return absl::FailedPreconditionError(absl::StrCat(
        "ranks ", absl::StrJoin(sharing, ", "), " would share GPU ", gpu,
        ", and NCCL needs a GPU per rank: start at most one rank per GPU (or, with NCCL >= 2.30, "
        "set NCCL_MULTI_RANK_GPU_ENABLE=1 on every rank); ",
        DescribeViews(ranks)));
  }
  return assignment;
}

// "rank\thost\tlocal_rank\tlocal_size\tgpu,gpu,...\tshare": host names and UUIDs hold no tab
// or comma; share is 1 or 0.
std::string EncodeGpuView(const RankGpuView& view) {
  return absl::StrCat(view.rank, "\t", view.host, "\t", view.local_rank, "\t", view.local_size,
                      "\t", absl::StrJoin(view.gpus, ","), "\t", view.may_share_gpu ? 1 : 0);
}

absl::StatusOr<RankGpuView> DecodeGpuView(absl::string_view text) {
  std::vector<std::string> fields = absl::StrSplit(text, '\t');
  RankGpuView view;
  if (fields.size() != 6 || !absl::SimpleAtoi(fields[0], &view.rank) ||
      !absl::SimpleAtoi(fields[2], &view.local_rank) ||
      !absl::SimpleAtoi(fields[3], &view.local_size) || (fields[5] != "0" && fields[5] != "1")) {
    return absl::InvalidArgumentError(absl::StrCat("not a rank's GPU view: '", text, "'"));
  }
  view.host = fields[1];
  if (!fields[4].empty()) view.gpus = absl::StrSplit(fields[4], ',');
  view.may_share_gpu = fields[5] == "1";
  return view;
}

}  // namespace lockstep::parallel
