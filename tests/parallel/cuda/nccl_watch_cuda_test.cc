// The NCCL communicator under its watch (parallel/collective_watch.h) on a real GPU, in a world
// of one: collectives finish and are retired, and one stalled behind a kernel that never ends
// times out, aborts the communicator and reports; so does one recorded into a CUDA graph, watched
// at each launch. Skips without a GPU.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
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
  absl::StatusOr<std::unique_ptr<DeviceCollectives::Done>> done = (*nccl)->MakeDone();
  ASSERT_TRUE(done.ok()) << done.status();
  for (int i = 0; i < 2000; ++i) {
    ASSERT_TRUE((*nccl)->EnqueueAllReduce({data}, ReduceOp::kSum, **done, nullptr, nullptr).ok());
  }
  ASSERT_TRUE((*nccl)->Barrier().ok());  // blocking: waits under the watch
  ASSERT_TRUE((*nccl)->ComputeWaitsFor(**done).ok());
  EXPECT_EQ(cudaStreamSynchronize(static_cast<cudaStream_t>(*compute)), cudaSuccess);
  EXPECT_FALSE(*failed);
}

// A communicator with a 1 s timeout that counts its failures, and the flag (mapped host memory)
// that ends the stall kernel once set.
struct Stallable {
  std::shared_ptr<NcclCommunicator> nccl;
  std::shared_ptr<std::atomic<int>> failures = std::make_shared<std::atomic<int>>(0);
  int* release = nullptr;
};

Stallable MakeStallable(Communicator& bootstrap) {
  Stallable s;
  EXPECT_EQ(cudaHostAlloc(&s.release, sizeof(int), cudaHostAllocMapped), cudaSuccess);
  *s.release = 0;
  absl::StatusOr<std::shared_ptr<NcclCommunicator>> nccl = NcclCommunicator::Create(
      bootstrap, 0, 1s, [failures = s.failures](const absl::Status&) { ++*failures; });
  EXPECT_TRUE(nccl.ok()) << nccl.status();
  if (nccl.ok()) s.nccl = *nccl;
  return s;
}

// Stalls `compute` behind a kernel that never ends (released after 4 s, should the abort wait
// for the stalled stream: the test then ends, slower), queues `work` behind it and runs
// `blocking`, a call that waits under the watch: it must end in the watch's report within the
// timeout, the failure handler run once.
void ExpectTheStallReported(Stallable& s, cudaStream_t compute, const std::function<void()>& work,
                            const std::function<absl::Status()>& blocking) {
  ASSERT_EQ(test_kernels::LaunchStall(s.release, compute), cudaSuccess);
  std::thread releaser([release = s.release] {
    std::this_thread::sleep_for(4s);
    *reinterpret_cast<volatile int*>(release) = 1;
  });
  const auto start = std::chrono::steady_clock::now();
  work();
  const absl::Status status = blocking();
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_THAT(status.message(), HasSubstr("did not finish within 1 s"));
  EXPECT_GE(waited, 1s);
  EXPECT_LT(waited, 10s);
  // The handler runs right after the failure is published.
  for (int i = 0; i < 1000 && *s.failures == 0; ++i) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(*s.failures, 1);
  releaser.join();
}

cudaStream_t Compute() {
  absl::StatusOr<void*> stream = ComputeStream(Device::CUDA(0));
  EXPECT_TRUE(stream.ok()) << stream.status();
  return stream.ok() ? static_cast<cudaStream_t>(*stream) : nullptr;
}

TEST_F(NcclWatchCudaTest, ACollectiveStalledPastTheTimeoutAbortsAndReports) {
  Stallable s = MakeStallable(*bootstrap_);
  ASSERT_NE(s.nccl, nullptr);
  Tensor data = Ones(1024);
  // The blocking AllReduce follows the compute stream, so the stall holds it.
  ExpectTheStallReported(
      s, Compute(), [] {}, [&] { return s.nccl->AllReduce(data, ReduceOp::kSum); });
  EXPECT_FALSE(s.nccl->Barrier().ok());  // the aborted communicator refuses more work
}

// An AllReduce recorded into a CUDA graph, as a replayed step holds it (Executor::ReplayAfter):
// each launch is watched through WatchLaunched, so launches finish and are retired, and one
// stalled behind a kernel that never ends times out and reports as one run directly does.
TEST_F(NcclWatchCudaTest, ACollectiveInACudaGraphIsWatchedAtEachLaunch) {
  Stallable s = MakeStallable(*bootstrap_);
  ASSERT_NE(s.nccl, nullptr);
  Tensor data = Ones(1024);
  const cudaStream_t compute = Compute();
  absl::StatusOr<std::unique_ptr<DeviceCollectives::Done>> done = s.nccl->MakeDone();
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_EQ(cudaStreamBeginCapture(compute, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  const absl::StatusOr<std::string> label =
      s.nccl->EnqueueAllReduce({data}, ReduceOp::kSum, **done, nullptr, nullptr);
  ASSERT_TRUE(s.nccl->ComputeWaitsFor(**done).ok());
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(compute, &graph), cudaSuccess);
  ASSERT_TRUE(label.ok()) << label.status();
  EXPECT_EQ(*label, "AllReduce of 4096 bytes on rank 0 of 1 (nccl)");
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int i = 0; i < 200; ++i) {
    ASSERT_EQ(cudaGraphLaunch(exec, compute), cudaSuccess);
    ASSERT_TRUE(s.nccl->WatchLaunched(*label).ok());
  }
  ASSERT_TRUE(s.nccl->Barrier().ok());  // blocking: waits under the watch
  EXPECT_EQ(*s.failures, 0);
  std::vector<float> host(1024);
  ASSERT_EQ(cudaMemcpy(host.data(), data.raw_data(), 1024 * sizeof(float), cudaMemcpyDeviceToHost),
            cudaSuccess);
  EXPECT_EQ(host[1023], 1.0f);  // a sum over a world of one

  ExpectTheStallReported(
      s, compute,
      [&] {
        ASSERT_EQ(cudaGraphLaunch(exec, compute), cudaSuccess);
        ASSERT_TRUE(s.nccl->WatchLaunched(*label).ok());
      },
      [&] { return s.nccl->Barrier(); });
  // The aborted communicator refuses the next launch (Kernel::BeforeLaunch) and its watch.
  EXPECT_FALSE(s.nccl->Usable().ok());
  EXPECT_FALSE(s.nccl->WatchLaunched(*label).ok());
  // NCCL's abort ends once no graph holds the communicator's collectives.
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

}  // namespace
}  // namespace lockstep::parallel
