// The timeout policy of device collectives (parallel/collective_watch.h) over a probe that
// stands in for NCCL: a completion that never comes, an error NCCL reports on its own, and
// collectives that finish.

#include "parallel/collective_watch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <set>
#include <string>

namespace lockstep::parallel {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

// A device whose collectives finish when the test says so.
class FakeProbe : public CollectiveProbe {
 public:
  void Finish(int64_t sequence) {
    std::lock_guard<std::mutex> lock(mutex_);
    finished_.insert(sequence);
  }
  void FailAsync(absl::Status error) {
    std::lock_guard<std::mutex> lock(mutex_);
    async_ = std::move(error);
  }
  absl::StatusOr<bool> Finished(int64_t sequence) override {
    std::lock_guard<std::mutex> lock(mutex_);
    return finished_.count(sequence) > 0;
  }
  absl::Status AsyncError() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return async_;
  }
  void Abort() override { ++aborts; }

  std::atomic<int> aborts = 0;

 private:
  std::mutex mutex_;
  std::set<int64_t> finished_;
  absl::Status async_;
};

// Records the failure handler's calls.
struct Failures {
  std::mutex mutex;
  std::vector<absl::Status> seen;
  CollectiveWatch::FailureHandler Handler() {
    return [this](const absl::Status& failure) {
      std::lock_guard<std::mutex> lock(mutex);
      seen.push_back(failure);
    };
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mutex);
    return seen.size();
  }
};

TEST(CollectiveWatchTest, FinishedCollectivesReleaseTheirWaiters) {
  FakeProbe probe;
  Failures failures;
  CollectiveWatch watch(probe, 10s, failures.Handler(), nullptr, 1ms);
  const int64_t first = watch.Issue("AllReduce of 4 bytes");
  const int64_t second = watch.Issue("AllReduce of 8 bytes");
  EXPECT_GT(second, first);
  probe.Finish(first);
  probe.Finish(second);
  EXPECT_TRUE(watch.WaitFor(first).ok());
  EXPECT_TRUE(watch.WaitFor(second).ok());
  EXPECT_TRUE(watch.failure().ok());
  EXPECT_EQ(probe.aborts, 0);
  EXPECT_EQ(failures.count(), 0u);
}

TEST(CollectiveWatchTest, ACompletionThatNeverComesTimesOutAbortsAndFailsEveryWaiter) {
  FakeProbe probe;
  Failures failures;
  CollectiveWatch watch(probe, 200ms, failures.Handler(), nullptr, 1ms);
  const auto start = std::chrono::steady_clock::now();
  const int64_t stuck = watch.Issue("AllReduce of 1.0 MB");
  std::future<absl::Status> waiter =
      std::async(std::launch::async, [&] { return watch.WaitFor(stuck); });
  const absl::Status status = waiter.get();
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr(absl::StrCat("device collective #", stuck, " AllReduce of 1.0 MB")),
                    HasSubstr("did not finish within 0.2 s: a rank died or took another path")));
  EXPECT_GE(waited, 200ms);
  EXPECT_LT(waited, 5s);
  EXPECT_EQ(probe.aborts, 1);
  // Later collectives fail at once with the same report, and the handler ran once.
  EXPECT_EQ(watch.WaitFor(watch.Issue("AllReduce of 4 bytes")), status);
  EXPECT_EQ(watch.failure(), status);
  while (failures.count() == 0) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(failures.count(), 1u);
  EXPECT_EQ(failures.seen[0], status);
}

TEST(CollectiveWatchTest, AnErrorTheCommunicatorReportsFailsAtOnceNamingTheCollective) {
  // A peer that stops answering over the network: NCCL notices before any timeout.
  FakeProbe probe;
  Failures failures;
  CollectiveWatch watch(probe, 600s, failures.Handler(), nullptr, 1ms);
  const int64_t waiting = watch.Issue("AllReduce of 2.0 MB");
  probe.FailAsync(
      absl::UnavailableError("NCCL: remote process exited or there was a network error"));
  const absl::Status status = watch.WaitFor(waiting);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr(absl::StrCat("device collective #", waiting, " AllReduce of 2.0 MB")),
                    HasSubstr("remote process exited")));
  EXPECT_EQ(probe.aborts, 1);
}

TEST(CollectiveWatchTest, AnErrorBetweenCollectivesFailsTheNextOne) {
  FakeProbe probe;
  Failures failures;
  CollectiveWatch watch(probe, 600s, failures.Handler(), nullptr, 1ms);
  probe.FailAsync(absl::InternalError("NCCL: unhandled system error"));
  while (watch.failure().ok()) std::this_thread::sleep_for(1ms);
  EXPECT_THAT(watch.failure().message(), HasSubstr("between collectives"));
  EXPECT_EQ(watch.WaitFor(watch.Issue("Barrier")), watch.failure());
  EXPECT_EQ(probe.aborts, 1);
}

TEST(CollectiveWatchTest, AProbeErrorIsAFailureToo) {
  // cudaEventQuery failing (a kernel fault on the stream) ends the job like a timeout.
  class BrokenProbe : public FakeProbe {
    absl::StatusOr<bool> Finished(int64_t) override {
      return absl::InternalError("cudaEventQuery: an illegal memory access was encountered");
    }
  } probe;
  Failures failures;
  CollectiveWatch watch(probe, 600s, failures.Handler(), nullptr, 1ms);
  const absl::Status status = watch.WaitFor(watch.Issue("AllReduce of 4 bytes"));
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr("AllReduce of 4 bytes"), HasSubstr("illegal memory access")));
  EXPECT_EQ(probe.aborts, 1);
}

TEST(CollectiveWatchTest, AnAbortThatBlocksHoldsBackNeitherTheFailureNorTheHandler) {
  // NCCL's abort waits for every CUDA graph holding the communicator's collectives to be
  // destroyed, and the rank's main thread destroys them only once it sees the failure.
  class BlockingAbortProbe : public FakeProbe {
   public:
    void Abort() override {
      ++aborts;
      released_.wait();
    }
    void Release() { release_.set_value(); }

   private:
    std::promise<void> release_;
    std::shared_future<void> released_ = release_.get_future().share();
  } probe;
  Failures failures;
  {
    CollectiveWatch watch(probe, 100ms, failures.Handler(), nullptr, 1ms);
    const auto start = std::chrono::steady_clock::now();
    const absl::Status status = watch.WaitFor(watch.Issue("AllReduce of 4 bytes"));
    EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
    EXPECT_EQ(probe.aborts, 1);  // begun, and still blocked
    while (failures.count() == 0) std::this_thread::sleep_for(1ms);
    EXPECT_EQ(failures.seen[0], status);
    probe.Release();  // the graphs are gone: the abort ends, and the watch can stop
  }
  EXPECT_EQ(failures.count(), 1u);
}

}  // namespace
}  // namespace lockstep::parallel
