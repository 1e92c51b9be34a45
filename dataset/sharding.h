#pragma once

// Which samples a shard (rank) reads in an epoch, and in what order. As MindSpore's
// DistributedSampler: the epoch's permutation of all N samples is cut into interleaved shards of
// ceil(N / num_shards) samples each, the tail padded by wrapping to the start (or, with
// drop_tail, floor(N / num_shards) samples and the tail dropped). The permutation is seeded by
// (seed, epoch) only, so every rank computes the same one.

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "dataset/sample_random.h"

namespace lockstep::dataset {

struct ShardOptions {
  int num_shards = 1;
  int shard_id = 0;
  bool shuffle = true;
  // false: pad the last round by wrapping to the start; true: drop it.
  bool drop_tail = false;
  // Neither pad nor drop (overrides drop_tail): the last round goes to the first
  // N % num_shards shards only, so the shards together read every sample once (exact evaluation).
  bool uneven_tail = false;
  uint64_t seed = 0;
  // At most this many samples per shard and epoch; 0 reads the whole shard.
  int64_t num_samples = 0;
};

absl::Status ValidateShardOptions(const ShardOptions& options);

// The sharding fields of a source's flat options (ImageFolderOptions, MnistOptions).
template <typename SourceOptions>
ShardOptions ShardOptionsOf(const SourceOptions& options) {
  return {.num_shards = options.num_shards,
          .shard_id = options.shard_id,
          .shuffle = options.shuffle,
          .drop_tail = options.drop_tail,
          .uneven_tail = options.uneven_tail,
          .seed = options.seed,
          .num_samples = options.num_samples};
}

// One sample of a shard's epoch.
struct ShardSlot {
  int64_t sample;    // index into the source
  int64_t position;  // place in the epoch's global (all-shard) order; keys the sample's RNG
  bool operator==(const ShardSlot&) const = default;
};

// Samples of this shard per epoch for a source of n samples (num_samples applied).
int64_t ShardSize(int64_t n, const ShardOptions& options);

// 0..n-1 in the order of a Fisher-Yates shuffle drawing from `random`, or in order without one.
std::vector<int64_t> Permutation(int64_t n, SampleRandom* random);

// The epoch's order of all n samples: a seeded Fisher-Yates shuffle, or 0..n-1 without shuffle.
std::vector<int64_t> EpochPermutation(int64_t n, bool shuffle, uint64_t seed, int64_t epoch);

// The shard's samples for `epoch`, in reading order.
std::vector<ShardSlot> ShardEpoch(int64_t n, const ShardOptions& options, int64_t epoch);

// MindSpore's shuffle buffer: keeps `buffer_size` samples and emits a random one of them each
// time the next arrives. Seeded by (seed, epoch).
std::vector<ShardSlot> ShuffleWithBuffer(std::vector<ShardSlot> slots, int64_t buffer_size,
                                         uint64_t seed, int64_t epoch);

}  // namespace lockstep::dataset
