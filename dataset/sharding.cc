#include "dataset/sharding.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "dataset/sample_random.h"

namespace lockstep::dataset {

absl::Status ValidateShardOptions(const ShardOptions& options) {
  if (options.num_shards < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_shards must be at least 1, got ", options.num_shards));
  }
  if (options.shard_id < 0 || options.shard_id >= options.num_shards) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard_id must be in [0, ", options.num_shards, "), got ", options.shard_id));
  }
  if (options.num_samples < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_samples must not be negative, got ", options.num_samples));
  }
  return absl::OkStatus();
}

int64_t ShardSize(int64_t n, const ShardOptions& options) {
  int64_t shards = options.num_shards;
  int64_t size = options.uneven_tail ? (n - options.shard_id + shards - 1) / shards
                 : options.drop_tail ? n / shards
                                     : (n + shards - 1) / shards;
  return options.num_samples > 0 ? std::min(size, options.num_samples) : size;
}

std::vector<int64_t> Permutation(int64_t n, SampleRandom* random) {
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  if (random == nullptr) return order;
  for (int64_t i = n - 1; i > 0; --i) std::swap(order[i], order[random->UniformInt(i + 1)]);
  return order;
}

std::vector<int64_t> EpochPermutation(int64_t n, bool shuffle, uint64_t seed, int64_t epoch) {
  SampleRandom random(seed, StreamId(StreamPurpose::kPermutation, epoch, 0), 0);
  return Permutation(n, shuffle ? &random : nullptr);
}

std::vector<ShardSlot> ShardEpoch(int64_t n, const ShardOptions& options, int64_t epoch) {
  std::vector<ShardSlot> slots;
  if (n == 0) return slots;
  std::vector<int64_t> order = EpochPermutation(n, options.shuffle, options.seed, epoch);
  int64_t size = ShardSize(n, options);
  slots.reserve(size);
  for (int64_t i = 0; i < size; ++i) {
    int64_t position = i * options.num_shards + options.shard_id;
    slots.push_back({order[position % n], position});
  }
  return slots;
}

std::vector<ShardSlot> ShuffleWithBuffer(std::vector<ShardSlot> slots, int64_t buffer_size,
                                         uint64_t seed, int64_t epoch) {
  if (buffer_size <= 1 || slots.size() <= 1) return slots;
  SampleRandom random(seed, StreamId(StreamPurpose::kShuffleBuffer, epoch, 0), 0);
  size_t fill = std::min(slots.size(), static_cast<size_t>(buffer_size));
  std::vector<ShardSlot> buffer(slots.begin(), slots.begin() + fill);
  std::vector<ShardSlot> out;
  out.reserve(slots.size());
  for (size_t next = fill; next < slots.size(); ++next) {
    size_t pick = random.UniformInt(buffer.size());
    out.push_back(buffer[pick]);
    buffer[pick] = slots[next];
  }
  while (!buffer.empty()) {
    size_t pick = random.UniformInt(buffer.size());
    out.push_back(buffer[pick]);
    buffer[pick] = buffer.back();
    buffer.pop_back();
  }
  return out;
}

}  // namespace lockstep::dataset
