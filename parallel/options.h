#pragma once

// How a training graph is parallelised, as MindSpore's auto-parallel context describes it.

#include <vector>

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
  // Every BatchNorm2d normalises with statistics over the whole global batch (SyncBatchNorm).
  bool sync_batch_norm = false;
};

}  // namespace lockstep::parallel
