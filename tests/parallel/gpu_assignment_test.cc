// The start-up rule that gives each rank its GPU (parallel/gpu_assignment.h), over the launcher
// styles it must serve and the ones it must refuse.

#include "parallel/gpu_assignment.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace lockstep::parallel {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// `hosts` ranks per host, each rank seeing `gpus(host, local_rank)`.
template <typename SeenBy>
std::vector<RankGpuView> Ranks(const std::vector<int>& hosts, SeenBy gpus) {
  std::vector<RankGpuView> views;
  for (int host = 0; host < static_cast<int>(hosts.size()); ++host) {
    for (int local = 0; local < hosts[host]; ++local) {
      views.push_back({.rank = static_cast<int>(views.size()),
                       .host = "node" + std::to_string(host),
                       .local_rank = local,
                       .local_size = hosts[host],
                       .gpus = gpus(host, local)});
    }
  }
  return views;
}

std::string Gpu(int host, int index) {
  return "GPU-" + std::to_string(host) + "-" + std::to_string(index);
}

std::vector<std::string> AllOfHost(int host, int count) {
  std::vector<std::string> gpus;
  for (int i = 0; i < count; ++i) gpus.push_back(Gpu(host, i));
  return gpus;
}

TEST(GpuAssignmentTest, EveryRankSeesItsHostsGpusAndTakesItsLocalRank) {
  auto views = Ranks({4, 4}, [](int host, int) { return AllOfHost(host, 4); });
  absl::StatusOr<GpuAssignment> assigned = AssignGpus(views);
  ASSERT_TRUE(assigned.ok()) << assigned.status();
  EXPECT_THAT(assigned->device, ElementsAre(0, 1, 2, 3, 0, 1, 2, 3));
  EXPECT_THAT(assigned->cpu_reason, IsEmpty());
}

TEST(GpuAssignmentTest, MoreGpusThanRanksLeavesTheRestIdle) {
  auto views = Ranks({2}, [](int host, int) { return AllOfHost(host, 8); });
  absl::StatusOr<GpuAssignment> assigned = AssignGpus(views);
  ASSERT_TRUE(assigned.ok()) << assigned.status();
  EXPECT_THAT(assigned->device, ElementsAre(0, 1));
}

TEST(GpuAssignmentTest, OneVisibleGpuPerRankIsTheRanksOwn) {
  // Slurm's --gpus-per-task=1: each rank sees only its own, as device 0.
  auto views = Ranks({4}, [](int host, int local) { return std::vector{Gpu(host, local)}; });
  absl::StatusOr<GpuAssignment> assigned = AssignGpus(views);
  ASSERT_TRUE(assigned.ok()) << assigned.status();
  EXPECT_THAT(assigned->device, ElementsAre(0, 0, 0, 0));
}

TEST(GpuAssignmentTest, OneRankAloneTakesTheFirstGpu) {
  auto views = Ranks({1}, [](int host, int) { return AllOfHost(host, 2); });
  absl::StatusOr<GpuAssignment> assigned = AssignGpus(views);
  ASSERT_TRUE(assigned.ok()) << assigned.status();
  EXPECT_THAT(assigned->device, ElementsAre(0));
}

TEST(GpuAssignmentTest, NoGpuAnywhereRunsOnTheCpuWithoutComment) {
  auto views = Ranks({2, 2}, [](int, int) { return std::vector<std::string>{}; });
  absl::StatusOr<GpuAssignment> assigned = AssignGpus(views);
  ASSERT_TRUE(assigned.ok()) << assigned.status();
  EXPECT_THAT(assigned->device, IsEmpty());
  EXPECT_THAT(assigned->cpu_reason, IsEmpty());
}

TEST(GpuAssignmentTest, SomeRanksWithoutAGpuPutEveryRankOnTheCpuAndSayWhy) {
  auto views = Ranks({2, 2}, [](int host, int) {
    return host == 0 ? AllOfHost(host, 2) : std::vector<std::string>{};
  });
  absl::StatusOr<GpuAssignment> assigned = AssignGpus(views);
  ASSERT_TRUE(assigned.ok()) << assigned.status();
  EXPECT_THAT(assigned->device, IsEmpty());
  EXPECT_THAT(
      assigned->cpu_reason,
      AllOf(HasSubstr("ranks 2, 3 see no GPU"), HasSubstr("every rank computes on the CPU"),
            HasSubstr("rank 2 on node1 (local rank 0 of 2) sees no GPU"),
            HasSubstr("rank 0 on node0 (local rank 0 of 2) sees 2 GPUs: GPU-0-0, GPU-0-1")));
}

TEST(GpuAssignmentTest, FewerGpusThanRanksIsAnErrorNamingWhatEachSees) {
  auto views = Ranks({4}, [](int host, int) { return AllOfHost(host, 2); });
  absl::StatusOr<GpuAssignment> assigned = AssignGpus(views);
  ASSERT_FALSE(assigned.ok());
  EXPECT_EQ(assigned.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(
      assigned.status().message(),
      AllOf(HasSubstr("cannot give every rank a GPU of its own"),
            HasSubstr("rank 3 on node0 (local rank 3 of 4) sees 2 GPUs: GPU-0-0, GPU-0-1")));
}

TEST(GpuAssignmentTest, TwoRanksGivenTheSameGpuAreRefused) {
  // A wrapper that shows both ranks of a host the same single device.
  auto views = Ranks({2}, [](int host, int) { return std::vector{Gpu(host, 0)}; });
  absl::StatusOr<GpuAssignment> assigned = AssignGpus(views);
  ASSERT_FALSE(assigned.ok());
  EXPECT_THAT(assigned.status().message(), AllOf(HasSubstr("ranks 0, 1 would share GPU GPU-0-0"),
                                                 HasSubstr("at most one rank per GPU")));
}

TEST(GpuAssignmentTest, RanksShareGpusWhenEveryRankLetsNcclRunSeveralOnOne) {
  auto views = Ranks({4}, [](int host, int) { return AllOfHost(host, 2); });
  for (RankGpuView& view : views) view.may_share_gpu = true;
  absl::StatusOr<GpuAssignment> assigned = AssignGpus(views);
  ASSERT_TRUE(assigned.ok()) << assigned.status();
  EXPECT_THAT(assigned->device, ElementsAre(0, 1, 0, 1));
  // One rank without the switch: refused as before, saying how to allow it.
  views[2].may_share_gpu = false;
  assigned = AssignGpus(views);
  ASSERT_FALSE(assigned.ok());
  views = Ranks({2}, [](int host, int) { return std::vector{Gpu(host, 0)}; });
  EXPECT_THAT(AssignGpus(views).status().message(), HasSubstr("NCCL_MULTI_RANK_GPU_ENABLE=1"));
}

TEST(GpuAssignmentTest, BothLauncherStylesMayMixWhileNoGpuIsShared) {
  // Rank 0 sees both GPUs and takes the first; rank 1 sees only the second.
  std::vector<RankGpuView> views = {
      {.rank = 0, .host = "n", .local_rank = 0, .local_size = 2, .gpus = AllOfHost(0, 2)},
      {.rank = 1, .host = "n", .local_rank = 1, .local_size = 2, .gpus = {Gpu(0, 1)}},
  };
  absl::StatusOr<GpuAssignment> assigned = AssignGpus(views);
  ASSERT_TRUE(assigned.ok()) << assigned.status();
  EXPECT_THAT(assigned->device, ElementsAre(0, 0));
  views[1].gpus = {Gpu(0, 0)};
  EXPECT_FALSE(AssignGpus(views).ok());
}

TEST(GpuAssignmentTest, ViewsSurviveTheirTextForm) {
  for (const RankGpuView& view :
       {RankGpuView{.rank = 3,
       .host = "gpu-node-7.cluster",
       .local_rank = 1,
       .local_size = 4,
       .gpus = AllOfHost(7, 3),
       .may_share_gpu = true},
        RankGpuView{.rank = 0, .host = "h", .local_rank = 0, .local_size = 1, .gpus = {}}}) {
    absl::StatusOr<RankGpuView> back = DecodeGpuView(EncodeGpuView(view));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->rank, view.rank);
    EXPECT_EQ(back->host, view.host);
    EXPECT_EQ(back->local_rank, view.local_rank);
    EXPECT_EQ(back->local_size, view.local_size);
    EXPECT_EQ(back->gpus, view.gpus);
    EXPECT_EQ(back->may_share_gpu, view.may_share_gpu);
  }
  EXPECT_FALSE(DecodeGpuView("1\thost").ok());
  EXPECT_FALSE(DecodeGpuView("x\th\t0\t1\t").ok());
}

}  // namespace
}  // namespace lockstep::parallel
