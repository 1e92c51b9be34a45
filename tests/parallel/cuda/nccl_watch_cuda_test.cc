// The NCCL communicator under its watch (parallel/collective_watch.h) on a real GPU, in a world
// of one: collectives finish and are retired, and one stalled behind a kernel that never ends
// times out, aborts the communicator and reports. Skips without a GPU.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "core/device_memory.h"
#include "ops/cuda/cuda_status.h"
#include "parallel/communicator.h"
#include "parallel/nccl_communicator.h"
#include "tests/parallel/cuda/stall_kernel.h"

namespace lockstep::parallel {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

class NcclWatchCudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!CudaAvailable()) GTEST_SKIP() << "no GPU";
  }
  std::shared_ptr<Communicator> bootstrap_ = MakeSelfCommunicator();
};

Tensor Ones(int64_t count) {
  std::vector<float> host(count, 1.0f);
  Tensor tensor = Tensor::Empty({count}, DType::kF32, Device::CUDA(0));
  EXPECT_EQ(
      cudaMemcpy(tensor.raw_data(), host.data(), count * sizeof(float), cudaMemcpyHostToDevice),
      cudaSuccess);
  return tensor;
}

TEST_F(NcclWatchCudaTest, ThousandsOfCollectivesFinishAndAreRetired) {
  auto failed = std::make_shared<std::atomic<bool>>(false);
  absl::StatusOr<std::shared_ptr<NcclCommunicator>> nccl = NcclCommunicator::Create(
      *bootstrap_, 0, 30s, [failed](const absl::Status&) { *failed = true; });
  ASSERT_TRUE(nccl.ok()) << nccl.status();
  Tensor data = Ones(1 << 16);
  absl::StatusOr<void*> compute = ComputeStream(Device::CUDA(0));
  ASSERT_TRUE(compute.ok());
  cudaEvent_t done = nullptr;
  ASSERT_EQ(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), cudaSuccess);
  for (int i = 0; i < 2000; ++i) {
    ASSERT_TRUE(
        (*nccl)
            ->EnqueueAllReduce({data}, ReduceOp::kSum, static_cast<cudaStream_t>(*compute), done)
            .ok());
  }
  ASSERT_TRUE((*nccl)->Barrier().ok());  // blocking: waits under the watch
  EXPECT_EQ(cudaEventSynchronize(done), cudaSuccess);
  cudaEventDestroy(done);
  EXPECT_FALSE(*failed);
}

TEST_F(NcclWatchCudaTest, ACollectiveStalledPastTheTimeoutAbortsAndReports) {
  int* release = nullptr;
  ASSERT_EQ(cudaHostAlloc(&release, sizeof(int), cudaHostAllocMapped), cudaSuccess);
  *release = 0;
  auto failures = std::make_shared<std::atomic<int>>(0);
  absl::StatusOr<std::shared_ptr<NcclCommunicator>> nccl = NcclCommunicator::Create(
      *bootstrap_, 0, 1s, [failures](const absl::Status&) { ++*failures; });
  ASSERT_TRUE(nccl.ok()) << nccl.status();
  Tensor data = Ones(1024);
  absl::StatusOr<void*> compute = ComputeStream(Device::CUDA(0));
  ASSERT_TRUE(compute.ok());
  ASSERT_EQ(test_kernels::LaunchStall(release, static_cast<cudaStream_t>(*compute)), cudaSuccess);
  // Should the abort wait for the stalled stream, the stall ends after 4 s and the test still
  // ends, slower.
  std::thread releaser([release] {
    std::this_thread::sleep_for(4s);
    *reinterpret_cast<volatile int*>(release) = 1;
  });
  const auto start = std::chrono::steady_clock::now();
  // The blocking AllReduce follows the compute stream, so the stall holds it.
  const absl::Status status = (*nccl)->AllReduce(data, ReduceOp::kSum);
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_THAT(status.message(), HasSubstr("did not finish within 1 s"));
  EXPECT_GE(waited, 1s);
  EXPECT_LT(waited, 10s);
  EXPECT_EQ(*failures, 1);
  EXPECT_FALSE((*nccl)->Barrier().ok());  // the aborted communicator refuses more work
  releaser.join();
}

}  // namespace
}  // namespace lockstep::parallel
