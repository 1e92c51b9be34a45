#pragma once

// How a training graph is parallelised, as MindSpore's auto-parallel context describes it, and
// how the communicators behave.

#include <chrono>
#include <cstddef>
#include <functional>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"

namespace lockstep::parallel {

enum class ParallelMode { kStandAlone, kDataParallel };

struct ParallelOptions {
  ParallelMode mode = ParallelMode::kStandAlone;
  // Average the gradients over the ranks (sum them when false). The AllReduce sums either way;
  // the optimizer divides by the world size with the loss scale.
  bool gradients_mean = true;
  // Bucket size of the fused gradient AllReduce (BENCHMARKS.md has the sweep behind it).
  double fusion_threshold_mb = 25.0;
  // MindSpore's all_reduce_fusion_config: split indices into the gradients in backward-ready
  // order, e.g. {20, 85} gives the buckets [0, 20), [20, 85), [85, end). Overrides the threshold.
  std::vector<int> all_reduce_fusion_config;
  // The dtype gradient buckets cross the wire in: f32 (MindSpore's DistributedGradReducer), or
  // bf16/f16 for half the bytes, as llm.c and DDP's bf16 compression hook reduce. The float32
  // gradients are rounded into a bucket of this dtype, reduced (each sum taken in float32 and
  // rounded), and converted back; master weights and their gradients stay float32.
  DType allreduce_dtype = DType::kF32;
  // Every BatchNorm2d normalises with statistics over the whole global batch (SyncBatchNorm).
  bool sync_batch_norm = false;
  // Whether the gradient AllReduce runs on the communication thread while the backward goes on,
  // or at its place in the step while the compute thread waits ($LOCKSTEP_OVERLAP_COMM=0 in the
  // binaries). Waiting can be a little faster when the communication thread has no core of its
  // own: sharing one with the backward, its copying, summing and cache traffic slow the
  // backward by about what they hide (BENCHMARKS.md).
  bool overlap_communication = true;
};

// How the communicators and their queues behave, for the life of a parallel::Context (given to
// parallel::Init). The binaries read them from the environment (examples/env_options.h).
struct CommOptions {
  // How long a rank waits for a collective before it gives up and reports where every rank is
  // ($LOCKSTEP_COLLECTIVE_TIMEOUT_S).
  std::chrono::milliseconds collective_timeout = std::chrono::seconds(300);
  // An MPI AllReduce of more bytes than this goes as back-to-back MPI_Allreduce calls of this
  // size; 0 sends each as one call ($LOCKSTEP_ALLREDUCE_SEGMENT_MB). Open MPI picks its
  // algorithm by message size, and segments of a few MB beat one large call on every transport
  // measured (BENCHMARKS.md, "Fused gradient AllReduce"). Rank 0's value holds for the job.
  size_t allreduce_segment_bytes = size_t{2} << 20;
  // This rank lets NCCL (>= 2.30) run several ranks of one communicator on one GPU
  // ($NCCL_MULTI_RANK_GPU_ENABLE=1): where every rank does, ranks may share GPUs
  // (gpu_assignment.h).
  bool ranks_may_share_gpu = false;
  // Called once, on a watch thread, when a device collective failed (timed out, or its
  // communicator reported an error), after the communicator was aborted and the failure
  // published: the rank's collectives and waits return the failure from then on. Library code
  // ends no process; a binary installs what ends its job (examples/end_job.h), as its main
  // thread may be blocked where the failure cannot reach it. Empty: nothing more happens.
  std::function<void(const absl::Status&)> on_device_failure;
};

}  // namespace lockstep::parallel
