#pragma once

// Which GPU each rank computes on, decided once at start-up from what every rank sees. Launchers
// differ: mpirun shows every rank all the GPUs of its host, Slurm's --gpus-per-task and many
// cluster wrappers show each rank exactly one through CUDA_VISIBLE_DEVICES. The rule covers
// both, never mixes GPU and CPU ranks (NCCL needs a GPU on every rank), and refuses the rest:
// - every rank sees at least as many GPUs as its host has ranks: GPU = local rank;
// - every rank sees exactly one GPU: that one;
// - no rank sees a GPU: every rank computes on the CPU;
// - some ranks see GPUs and others none: every rank computes on the CPU, and the assignment
//   says why;
// - anything else (fewer GPUs than ranks, two ranks on one GPU): an error naming the ranks,
//   their hosts and what each sees;
// - except where every rank was started with NCCL_MULTI_RANK_GPU_ENABLE=1 (NCCL >= 2.30, which
//   runs several ranks of one communicator on one GPU): then ranks that see fewer GPUs than
//   their host has ranks share them, local rank i taking GPU i modulo the GPUs it sees.

#include <string>
#include <vector>

#include "core/status.h"

namespace lockstep::parallel {

// What one rank sees.
struct RankGpuView {
  int rank = 0;
  std::string host;
  int local_rank = 0;
  int local_size = 1;
  std::vector<std::string> gpus;  // the UUIDs of its visible devices, in CUDA's order
  bool may_share_gpu = false;     // NCCL_MULTI_RANK_GPU_ENABLE=1 in its environment
};

struct GpuAssignment {
  // Per rank, the index of its CUDA device among the devices it sees; empty when every rank
  // computes on the CPU.
  std::vector<int> device;
  // Why every rank computes on the CPU although some rank sees a GPU; empty otherwise.
  std::string cpu_reason;
};

// `ranks` holds every rank's view, in rank order.
absl::StatusOr<GpuAssignment> AssignGpus(const std::vector<RankGpuView>& ranks);

// A view as one line of text and back, to gather every rank's over the host communicator.
std::string EncodeGpuView(const RankGpuView& view);
absl::StatusOr<RankGpuView> DecodeGpuView(absl::string_view text);

}  // namespace lockstep::parallel
