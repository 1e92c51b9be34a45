// Two NCCL ranks in one process on GPU 0, one thread each (NCCL >= 2.30 with
// NCCL_MULTI_RANK_GPU_ENABLE=1; threads share a CUDA context, so no MPS is needed): real ring
// and tree kernels between two communicators, which a world of one never runs. Exact sums and
// minimums of data that differ per rank, in float32 and bf16; a peer that never arrives leading
// to the timeout, the abort and the refusal of later
// collectives, and an exit that does not hang on the missing peer; a join that times out. Skips
// where NCCL or the switch is missing (scripts/gpu/checks.sh multi sets it).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <barrier>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/half.h"
#include "ops/cuda/cuda_status.h"
#include "parallel/nccl_communicator.h"

namespace lockstep::parallel {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

constexpr int kRanks = 2;

// The host side of threads posing as ranks: only Broadcast, which hands out NCCL's unique id.
class ThreadBootstrap {
 public:
  class Rank : public Communicator {
   public:
    Rank(ThreadBootstrap& all, int rank) : all_(all), rank_(rank) {}
    int rank() const override { return rank_; }
    int size() const override { return kRanks; }
    Device device() const override { return Device::CPU(); }
    const char* backend() const override { return "threads"; }
    absl::Status Broadcast(const Tensor& inout, int root) override {
      if (rank_ == root) std::memcpy(all_.id_, inout.raw_data(), inout.nbytes());
      all_.meet_.arrive_and_wait();
      if (rank_ != root) std::memcpy(inout.raw_data(), all_.id_, inout.nbytes());
      all_.meet_.arrive_and_wait();
      return absl::OkStatus();
    }
    absl::Status AllReduce(const Tensor&, ReduceOp) override { return Unused(); }
    absl::Status AllGather(const Tensor&, const Tensor&) override { return Unused(); }
    absl::Status ReduceScatter(const Tensor&, const Tensor&, ReduceOp) override { return Unused(); }
    absl::Status Barrier() override { return Unused(); }

   private:
    static absl::Status Unused() { return absl::UnimplementedError("not for threads"); }
    ThreadBootstrap& all_;
    int rank_;
  };

 private:
  std::barrier<> meet_{kRanks};
  char id_[sizeof(ncclUniqueId)] = {};
};

// Runs `body(rank)` on one thread per rank and waits for them.
void OnEveryThread(const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int rank = 0; rank < kRanks; ++rank) threads.emplace_back(body, rank);
  for (std::thread& thread : threads) thread.join();
}

class NcclMultiRankTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!CudaAvailable()) GTEST_SKIP() << "no GPU";
    int version = 0;
    ASSERT_EQ(ncclGetVersion(&version), ncclSuccess);
    if (version < 23000) GTEST_SKIP() << "NCCL " << version << " runs one rank per GPU";
    const char* enabled = std::getenv("NCCL_MULTI_RANK_GPU_ENABLE");
    if (enabled == nullptr || std::string(enabled) != "1") {
      GTEST_SKIP() << "NCCL_MULTI_RANK_GPU_ENABLE=1 not set";
    }
  }

  // Rank `rank`'s communicator on GPU 0, its failures counted.
  std::shared_ptr<NcclCommunicator> Join(int rank, std::chrono::milliseconds timeout) {
    ThreadBootstrap::Rank bootstrap(bootstrap_, rank);
    absl::StatusOr<std::shared_ptr<NcclCommunicator>> nccl = NcclCommunicator::Create(
        bootstrap, 0, timeout, [this](const absl::Status&) { ++failures_; });
    EXPECT_TRUE(nccl.ok()) << nccl.status();
    return nccl.ok() ? *nccl : nullptr;
  }

  ThreadBootstrap bootstrap_;
  std::atomic<int> failures_{0};
};

template <typename T>
Tensor OnDevice(const std::vector<T>& host, DType dtype) {
  Tensor tensor = Tensor::Empty({static_cast<int64_t>(host.size())}, dtype, Device::CUDA(0));
  EXPECT_EQ(cudaMemcpy(tensor.raw_data(), host.data(), tensor.nbytes(), cudaMemcpyHostToDevice),
            cudaSuccess);
  return tensor;
}

template <typename T>
std::vector<T> ToHost(const Tensor& tensor) {
  std::vector<T> host(tensor.numel());
  EXPECT_EQ(cudaMemcpy(host.data(), tensor.raw_data(), tensor.nbytes(), cudaMemcpyDeviceToHost),
            cudaSuccess);
  return host;
}

// Rank r's element i: small integers, exact in bf16 and in every sum here.
float Element(int rank, int i) { return static_cast<float>((rank + 1) * (i % 7 + 1)); }

TEST_F(NcclMultiRankTest, SumsAndMinimumsOfDataThatDiffersPerRankAreExact) {
  constexpr int kCount = 1 << 20;
  OnEveryThread([&](int rank) {
    std::shared_ptr<NcclCommunicator> nccl = Join(rank, 60s);
    ASSERT_NE(nccl, nullptr);
    std::vector<float> mine(kCount);
    std::vector<BFloat16> mine_bf16(kCount);
    for (int i = 0; i < kCount; ++i) {
      mine[i] = Element(rank, i);
      mine_bf16[i] = FloatTo<BFloat16>(mine[i]);
    }
    Tensor sum = OnDevice(mine, DType::kF32), min = OnDevice(mine, DType::kF32);
    Tensor sum_bf16 = OnDevice(mine_bf16, DType::kBF16);
    ASSERT_TRUE(nccl->AllReduce(sum, ReduceOp::kSum).ok());
    ASSERT_TRUE(nccl->AllReduce(min, ReduceOp::kMin).ok());
    ASSERT_TRUE(nccl->AllReduce(sum_bf16, ReduceOp::kSum).ok());
    const std::vector<float> sums = ToHost<float>(sum), mins = ToHost<float>(min);
    const std::vector<BFloat16> sums_bf16 = ToHost<BFloat16>(sum_bf16);
    for (int i = 0; i < kCount; ++i) {
      const float expected = Element(0, i) + Element(1, i);
      ASSERT_EQ(sums[i], expected) << "element " << i << " on rank " << rank;
      ASSERT_EQ(mins[i], Element(0, i)) << "element " << i << " on rank " << rank;
      ASSERT_EQ(ToFloat(sums_bf16[i]), expected) << "element " << i << " on rank " << rank;
    }
  });
  EXPECT_EQ(failures_, 0);
}

// Rank 1 does not arrive (stuck elsewhere): rank 0's AllReduce times out after 1 s with the
// report, the communicator is aborted, and later collectives are refused. Rank 1 then exits:
// destroying its communicator, whose peer is gone, takes the timeout and an abort, not a hang.
TEST_F(NcclMultiRankTest, APeerThatNeverArrivesEndsInTheTimeoutTheAbortAndRefusals) {
  OnEveryThread([&](int rank) {
    std::shared_ptr<NcclCommunicator> nccl = Join(rank, 1s);
    ASSERT_NE(nccl, nullptr);
    if (rank == 1) {
      std::this_thread::sleep_for(3s);
      const auto start = std::chrono::steady_clock::now();
      nccl.reset();
      EXPECT_LT(std::chrono::steady_clock::now() - start, 4s);
      return;
    }
    Tensor data = OnDevice(std::vector<float>(1024, 1.0f), DType::kF32);
    const auto start = std::chrono::steady_clock::now();
    const absl::Status status = nccl->AllReduce(data, ReduceOp::kSum);
    EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
    EXPECT_THAT(status.message(), HasSubstr("did not finish within 1 s"));
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
    EXPECT_FALSE(nccl->Usable().ok());
    EXPECT_FALSE(nccl->Barrier().ok());
  });
  EXPECT_GE(failures_, 1);
}

// Rank 1 never arrives: rank 0's join gives up after the timeout, naming what it waited for.
TEST_F(NcclMultiRankTest, AJoinThatNobodyAnswersTimesOut) {
  const auto start = std::chrono::steady_clock::now();
  std::thread rank0([&] {
    ThreadBootstrap::Rank bootstrap(bootstrap_, 0);
    absl::StatusOr<std::shared_ptr<NcclCommunicator>> nccl =
        NcclCommunicator::Create(bootstrap, 0, 2s, [](const absl::Status&) {});
    ASSERT_FALSE(nccl.ok());
    EXPECT_THAT(nccl.status().message(), HasSubstr("still in progress after 2 s"));
    EXPECT_THAT(nccl.status().message(), HasSubstr("rank 0 joining the NCCL communicator"));
  });
  // Rank 1 takes the id and walks away.
  ThreadBootstrap::Rank rank1(bootstrap_, 1);
  Tensor received = Tensor::Empty({static_cast<int64_t>(sizeof(ncclUniqueId))}, DType::kU8);
  ASSERT_TRUE(rank1.Broadcast(received, 0).ok());
  rank0.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

}  // namespace
}  // namespace lockstep::parallel
