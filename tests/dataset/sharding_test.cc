#include "dataset/sharding.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace lockstep::dataset {
namespace {

constexpr int64_t kN = 10;
constexpr int kShards = 4;

std::vector<std::vector<ShardSlot>> AllShards(const ShardOptions& base, int64_t epoch) {
  std::vector<std::vector<ShardSlot>> shards;
  for (int rank = 0; rank < kShards; ++rank) {
    ShardOptions options = base;
    options.num_shards = kShards;
    options.shard_id = rank;
    shards.push_back(ShardEpoch(kN, options, epoch));
  }
  return shards;
}

TEST(DatasetShardingTest, ShardsCoverEverySampleWithCeilSizesEveryEpoch) {
  for (int64_t epoch = 0; epoch < 6; ++epoch) {
    std::set<int64_t> samples, positions;
    for (const std::vector<ShardSlot>& shard : AllShards({.seed = 7}, epoch)) {
      EXPECT_EQ(shard.size(), 3u);  // ceil(10 / 4)
      for (const ShardSlot& slot : shard) {
        samples.insert(slot.sample);
        positions.insert(slot.position);
      }
    }
    EXPECT_EQ(samples.size(), static_cast<size_t>(kN)) << "epoch " << epoch;
    EXPECT_EQ(positions.size(), 12u);  // the padded tail has positions of its own
  }
}

TEST(DatasetShardingTest, EveryRankComputesTheSamePermutation) {
  for (int64_t epoch = 0; epoch < 4; ++epoch) {
    std::vector<int64_t> order = EpochPermutation(kN, true, 7, epoch);
    std::vector<std::vector<ShardSlot>> shards = AllShards({.seed = 7}, epoch);
    for (int rank = 0; rank < kShards; ++rank) {
      // Each rank derives its shard from the same global order: interleaved, wrapping.
      for (size_t i = 0; i < shards[rank].size(); ++i) {
        EXPECT_EQ(shards[rank][i].sample, order[(i * kShards + rank) % kN]);
      }
      EXPECT_EQ(shards[rank], AllShards({.seed = 7}, epoch)[rank]);
    }
  }
}

TEST(DatasetShardingTest, PermutationChangesBetweenEpochsAndIsReproducible) {
  std::set<std::vector<int64_t>> seen;
  for (int64_t epoch = 0; epoch < 6; ++epoch) {
    std::vector<int64_t> order = EpochPermutation(kN, true, 7, epoch);
    EXPECT_TRUE(std::is_permutation(order.begin(), order.end(),
                                    EpochPermutation(kN, false, 7, epoch).begin()));
    EXPECT_EQ(order, EpochPermutation(kN, true, 7, epoch));
    seen.insert(order);
  }
  EXPECT_EQ(seen.size(), 6u);
  EXPECT_NE(EpochPermutation(kN, true, 7, 0), EpochPermutation(kN, true, 8, 0));
}

TEST(DatasetShardingTest, DropTailGivesFloorSizesWithoutDuplicates) {
  std::set<int64_t> samples;
  for (const std::vector<ShardSlot>& shard : AllShards({.drop_tail = true}, 0)) {
    EXPECT_EQ(shard.size(), 2u);
    for (const ShardSlot& slot : shard) samples.insert(slot.sample);
  }
  EXPECT_EQ(samples.size(), 8u);
}

TEST(DatasetShardingTest, NoShuffleReadsInOrderAndNumSamplesCaps) {
  std::vector<ShardSlot> slots = ShardEpoch(kN, {.shuffle = false}, 3);
  ASSERT_EQ(slots.size(), static_cast<size_t>(kN));
  for (int64_t i = 0; i < kN; ++i) EXPECT_EQ(slots[i].sample, i);
  EXPECT_EQ(ShardEpoch(kN, {.num_samples = 4}, 0).size(), 4u);
  EXPECT_EQ(ShardSize(kN, {.num_shards = 4, .num_samples = 100}), 3);
}

TEST(DatasetShardingTest, ShuffleBufferPermutesReproducibly) {
  std::vector<ShardSlot> slots = ShardEpoch(20, {.shuffle = false}, 0);
  std::vector<ShardSlot> shuffled = ShuffleWithBuffer(slots, 5, 1, 0);
  EXPECT_NE(shuffled, slots);
  EXPECT_TRUE(std::is_permutation(shuffled.begin(), shuffled.end(), slots.begin()));
  EXPECT_EQ(shuffled, ShuffleWithBuffer(slots, 5, 1, 0));
  EXPECT_NE(shuffled, ShuffleWithBuffer(slots, 5, 1, 1));
  EXPECT_EQ(ShuffleWithBuffer(slots, 1, 1, 0), slots);
}

TEST(DatasetShardingTest, RejectsBadShardIds) {
  EXPECT_FALSE(ValidateShardOptions({.num_shards = 4, .shard_id = 4}).ok());
  EXPECT_FALSE(ValidateShardOptions({.num_shards = 0}).ok());
  EXPECT_TRUE(ValidateShardOptions({.num_shards = 4, .shard_id = 3}).ok());
}

}  // namespace
}  // namespace lockstep::dataset
