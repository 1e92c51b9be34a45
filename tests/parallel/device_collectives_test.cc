// The host-side logic of device collectives, at -n 2 and -n 4: the stream-ordered AllReduce
// kernel (parallel/ops/stream_all_reduce.h) in compiled steps, their buckets, a narrower wire
// dtype, a step recorded and launched again (Executor::ReplayAfter) with every launch watched,
// the agreement when a rank cannot record, and a rank that stalls in the middle of a step (the
// watch's timeout, the abort, later collectives refused). The same tests run over two
// implementations of DeviceCollectives: the MPI-backed stand-in on any machine (CI), and NCCL on
// a GPU with LOCKSTEP_DEVICE_COLLECTIVES=nccl (scripts/gpu/checks.sh multi).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "graph/builder.h"
#include "graph/compile.h"
#include "graph/op_registry.h"
#include "parallel/comm_group.h"
#include "parallel/ops/device_collective_kernel.h"
#include "parallel/ops/stream_all_reduce.h"
#include "tests/parallel/mpi_stand_in.h"
#include "tests/parallel/mpi_test_main.h"
#include "tests/parallel/stand_in_device.h"
#ifdef LOCKSTEP_WITH_CUDA
#include "parallel/nccl_communicator.h"
#endif

namespace lockstep::parallel {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

bool OnNccl() {
  const char* which = std::getenv("LOCKSTEP_DEVICE_COLLECTIVES");
  return which != nullptr && std::string(which) == "nccl";
}

// (x) -> x, in place: on rank "rank" it sleeps "pause_ms" first, and cannot be recorded when
// "refuses_replay" is set. Changes no collective: a rank that stalls or cannot record.
REGISTER_OP("RankQuirk")
    .Inputs(1)
    .Outputs(1)
    .InPlaceEach()
    .Attr("rank", int64_t{0})
    .Attr("pause_ms", int64_t{0})
    .Attr("refuses_replay", false)
    .Attr("group", std::string(kWorldGroup))  // whose rank it asks
    .Infer([](const InferContext& ctx) {
      return absl::StatusOr<std::vector<TensorType>>(std::vector<TensorType>{ctx.inputs[0]});
    });

class RankQuirkKernel : public Kernel {
 public:
  RankQuirkKernel(const Node& node, int rank)
      : mine_(node.attrs.GetInt("rank") == rank),
        pause_(node.attrs.GetInt("pause_ms")),
        replayable_(!(mine_ && node.attrs.GetBool("refuses_replay"))) {}
  absl::Status Run(const KernelIO&) override {
    if (mine_) std::this_thread::sleep_for(pause_);
    return absl::OkStatus();
  }
  bool replayable() const override { return replayable_; }

 private:
  bool mine_;
  std::chrono::milliseconds pause_;
  bool replayable_;
};

absl::StatusOr<std::unique_ptr<Kernel>> CreateRankQuirk(const Node& node,
                                                        const KernelContext& ctx) {
  LS_ASSIGN_OR_RETURN(DeviceCollectives * collectives, DeviceCollectivesFor(node, ctx));
  return std::make_unique<RankQuirkKernel>(node, collectives->rank());
}

REGISTER_KERNEL({.op = "RankQuirk",
                 .device = stand_in::kStandInDeviceType,
                 .create = CreateRankQuirk});
REGISTER_KERNEL({.op = "AllReduce",
                 .device = stand_in::kStandInDeviceType,
                 .dtype = DType::kF32,
                 .create = StreamAllReduceFactory(ConvertOnHost)});
#ifdef LOCKSTEP_WITH_CUDA
REGISTER_KERNEL({.op = "RankQuirk", .device = DeviceType::kCUDA, .create = CreateRankQuirk});
#endif

constexpr int64_t kElements = 1000;

// What rank r writes into bucket b in run `run`: small integers, so every sum is exact, in bf16
// too.
float Element(int rank, int bucket, int64_t i, int run) {
  return static_cast<float>((rank + 1) * (bucket + 1) + i % 3 + run);
}

struct Bucket {
  std::string op = "sum";
  std::string wire_dtype;  // empty: the gradients' own
};

class DeviceCollectivesTest : public ::testing::Test {
 protected:
  void TearDown() override {
    // The stream's queued work reads and writes the graph's memory, so it ends first, as a
    // GPU test synchronizes before freeing; a collective stalled at a peer ends when it arrives.
    if (!OnNccl()) stand_in::StandIn().Drain();
    executor_.reset();
    groups_.reset();
    collectives_ = nullptr;
    world_.reset();
    stand_in::StandIn().RefuseRecordings(false);
  }

  // Device collectives with `timeout` whose failures are counted, not fatal.
  void Start(std::chrono::milliseconds timeout = 60s) {
    auto on_failure = [failures = failures_](const absl::Status&) { ++*failures; };
    if (OnNccl()) {
#ifdef LOCKSTEP_WITH_CUDA
      absl::StatusOr<std::shared_ptr<NcclCommunicator>> nccl =
          NcclCommunicator::Create(*TestContext().HostWorld(), TestContext().device().index,
                                   timeout, on_failure, TestContext().watchdog());
      ASSERT_TRUE(nccl.ok()) << nccl.status();
      world_ = *nccl;
      collectives_ = nccl->get();
#else
      GTEST_FAIL() << "LOCKSTEP_DEVICE_COLLECTIVES=nccl in a build without CUDA";
#endif
    } else {
      absl::StatusOr<std::shared_ptr<Communicator>> host = TestContext().World(Device::CPU());
      ASSERT_TRUE(host.ok()) << host.status();
      auto stand_in = std::make_shared<stand_in::MpiStandIn>(*host, timeout, on_failure,
                                                             TestContext().watchdog());
      world_ = stand_in;
      collectives_ = stand_in.get();
    }
    groups_ = std::make_shared<CommGroups>(TestContext());
    groups_->Provide(world_);
  }

  Device device() const { return world_->device(); }
  int rank() const { return world_->rank(); }
  int size() const { return world_->size(); }

  // State g<b> reduced in place, one bucket each, as gradients are; a RankQuirk with `quirk`
  // before the AllReduce of bucket `quirk_before`.
  void Compile(const std::vector<Bucket>& buckets, int quirk_before = -1, Attrs quirk = {}) {
    auto graph = std::make_unique<Graph>();
    Builder b(graph.get());
    for (size_t i = 0; i < buckets.size(); ++i) {
      b.SetNamePrefix(absl::StrCat("bucket", i, "/"));
      Value* g = b.State(absl::StrCat("g", i), {kElements});
      if (static_cast<int>(i) == quirk_before) g = b.Op1("RankQuirk", {g}, quirk);
      Attrs attrs;
      attrs.Set("op", buckets[i].op);
      attrs.Set("wire_dtype", buckets[i].wire_dtype);
      graph->AddOutput(absl::StrCat("update/g", i), b.Op1("AllReduce", {g}, attrs),
                       OutputKind::kUpdate);
    }
    ASSERT_TRUE(b.status().ok()) << b.status();
    CompileOptions options{.device = device()};
    options.config.Set(groups_);
    absl::StatusOr<std::unique_ptr<Executor>> executor =
        lockstep::Compile(std::move(graph), options);
    ASSERT_TRUE(executor.ok()) << executor.status();
    executor_ = *std::move(executor);
    buckets_ = buckets;
  }

  void WriteInputs(int run) {
    for (size_t b = 0; b < buckets_.size(); ++b) {
      Tensor host = Tensor::Empty({kElements}, DType::kF32);
      for (int64_t i = 0; i < kElements; ++i) {
        host.data<float>()[i] = Element(rank(), static_cast<int>(b), i, run);
      }
      ASSERT_TRUE(executor_->WriteInput(absl::StrCat("g", b), host).ok());
    }
  }

  // Every bucket holds the reduction over the ranks of what they wrote in run `run`.
  void ExpectReduced(int run) {
    for (size_t b = 0; b < buckets_.size(); ++b) {
      absl::StatusOr<Tensor> out = executor_->ReadInput(absl::StrCat("g", b));
      ASSERT_TRUE(out.ok()) << out.status();
      for (int64_t i = 0; i < kElements; ++i) {
        float expected = buckets_[b].op == "min" ? Element(0, b, i, run) : 0.0f;
        if (buckets_[b].op == "sum") {
          for (int r = 0; r < size(); ++r) expected += Element(r, static_cast<int>(b), i, run);
        }
        ASSERT_EQ(out->data<float>()[i], expected)
            << "bucket " << b << " element " << i << " run " << run << " on rank " << rank();
      }
    }
  }

  void RunAndCheck(int run) {
    WriteInputs(run);
    ASSERT_TRUE(executor_->Run().ok());
    ExpectReduced(run);
  }

  std::shared_ptr<std::atomic<int>> failures_ = std::make_shared<std::atomic<int>>(0);
  std::shared_ptr<Communicator> world_;
  DeviceCollectives* collectives_ = nullptr;
  std::shared_ptr<CommGroups> groups_;
  std::unique_ptr<Executor> executor_;
  std::vector<Bucket> buckets_;
};

TEST_F(DeviceCollectivesTest, BucketsReduceOverEveryRankBehindTheStep) {
  ASSERT_NO_FATAL_FAILURE(Start());
  ASSERT_NO_FATAL_FAILURE(Compile({{}, {.op = "min"}, {}}));
  for (const Executor::StepWaits& step : executor_->WaitPlan()) {
    EXPECT_TRUE(step.asynchronous) << step.node->Describe();  // the host does not wait
  }
  for (int run = 0; run < 3; ++run) RunAndCheck(run);
  EXPECT_EQ(*failures_, 0);
}

TEST_F(DeviceCollectivesTest, ANarrowerWireDTypeReducesExactly) {
  ASSERT_NO_FATAL_FAILURE(Start());
  ASSERT_NO_FATAL_FAILURE(Compile({{.wire_dtype = "bf16"}, {.op = "min", .wire_dtype = "bf16"}}));
  for (int run = 0; run < 2; ++run) RunAndCheck(run);
}

TEST_F(DeviceCollectivesTest, ARecordedStepIsLaunchedAgainWithEveryLaunchWatched) {
  ASSERT_NO_FATAL_FAILURE(Start());
  ASSERT_NO_FATAL_FAILURE(Compile({{}, {.wire_dtype = "bf16"}, {.op = "min"}}));
  executor_->ReplayAfter(2);
  for (int run = 0; run < 200; ++run) RunAndCheck(run % 50);
  EXPECT_TRUE(executor_->replaying());
  ASSERT_TRUE(world_->Barrier().ok());  // waits under the watch behind every launch
  EXPECT_EQ(*failures_, 0);
}

TEST_F(DeviceCollectivesTest, WhenOneRankCannotRecordEveryRankRunsKernelByKernel) {
  ASSERT_NO_FATAL_FAILURE(Start());
  ASSERT_NO_FATAL_FAILURE(Compile({{}, {}}, 1, {{"rank", int64_t{1}}, {"refuses_replay", true}}));
  executor_->ReplayAfter(1);
  for (int run = 0; run < 4; ++run) RunAndCheck(run);
  EXPECT_FALSE(executor_->replaying());
}

TEST_F(DeviceCollectivesTest, TheAgreementIsTheMinimumOverTheRanks) {
  ASSERT_NO_FATAL_FAILURE(Start());
  absl::StatusOr<bool> all = collectives_->OnEveryRank(true);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_TRUE(*all);
  absl::StatusOr<bool> not_last = collectives_->OnEveryRank(rank() != size() - 1);
  ASSERT_TRUE(not_last.ok()) << not_last.status();
  EXPECT_FALSE(*not_last);
}

// Rank 1 stops for 2.5 s before the step's last bucket: every other rank's wait for it ends in
// the watch's report after the 1 s timeout, the failure handler runs once, and the next step is
// refused before it queues anything. (Rank 1 itself finishes on the stand-in, whose abort cannot
// take back a collective already inside MPI; on NCCL its peers' abort fails it too.)
TEST_F(DeviceCollectivesTest, ARankStalledInTheMiddleOfAStepEndsItWithTheReport) {
  ASSERT_NO_FATAL_FAILURE(Start(1s));
  ASSERT_NO_FATAL_FAILURE(
      Compile({{}, {}, {}}, 2, {{"rank", int64_t{1}}, {"pause_ms", int64_t{2500}}}));
  WriteInputs(0);
  const auto start = std::chrono::steady_clock::now();
  const absl::Status status = executor_->Run();
  const auto took = std::chrono::steady_clock::now() - start;
  if (rank() != 1) {
    EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
    EXPECT_THAT(status.message(), HasSubstr("did not finish within 1 s"));
    EXPECT_THAT(status.message(), HasSubstr("AllReduce of 4000 bytes"));
    EXPECT_LT(took, 5s);
    for (int i = 0; i < 1000 && *failures_ == 0; ++i) std::this_thread::sleep_for(1ms);
    EXPECT_EQ(*failures_, 1);
    const absl::Status next = executor_->Run();
    EXPECT_FALSE(next.ok());
    EXPECT_FALSE(collectives_->Usable().ok());
  }
}

}  // namespace
}  // namespace lockstep::parallel
