#include "parallel/collective_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <regex>
#include <thread>
#include <vector>

namespace lockstep::parallel {
namespace {

using std::chrono::milliseconds;

TEST(CollectiveQueueTest, RunsInSubmissionOrderOnItsOwnThread) {
  std::vector<int> order;
  std::vector<std::thread::id> threads;
  std::vector<CollectiveHandle> handles;
  {
    CollectiveQueue queue;
    for (int i = 0; i < 50; ++i) {
      handles.push_back(queue.Submit(absl::StrCat("#", i), [&order, &threads, i] {
        order.push_back(i);
        threads.push_back(std::this_thread::get_id());
        return absl::OkStatus();
      }));
    }
    ASSERT_TRUE(handles.back().Wait(milliseconds(10000)).ok());
  }
  ASSERT_EQ(order.size(), 50u);
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(order[i], i);
    EXPECT_EQ(threads[i], threads[0]);
    EXPECT_TRUE(handles[i].done());
  }
  EXPECT_NE(threads[0], std::this_thread::get_id());
}

TEST(CollectiveQueueTest, HandsBackEachStatus) {
  CollectiveQueue queue;
  CollectiveHandle failed =
      queue.Submit("AllReduce 'x'", [] { return absl::UnavailableError("peer 3 went away"); });
  CollectiveHandle fine = queue.Submit("AllReduce 'y'", [] { return absl::OkStatus(); });
  absl::Status status = failed.Wait(milliseconds(10000));
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(status.message(), "peer 3 went away");
  EXPECT_TRUE(fine.Wait(milliseconds(10000)).ok());
  EXPECT_EQ(failed.Wait(milliseconds(0)).code(), absl::StatusCode::kUnavailable);  // again
}

TEST(CollectiveQueueTest, WaitGivesUpAfterTheTimeoutNamingTheCollective) {
  CollectiveQueue queue;
  CollectiveHandle slow = queue.Submit("AllReduce node 'allreduce/fusion_3' (#812)", [] {
    std::this_thread::sleep_for(milliseconds(300));
    return absl::OkStatus();
  });
  absl::Status status = slow.Wait(milliseconds(50));
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  // #n: the collective's number in this process, the same on every rank of a job.
  EXPECT_TRUE(std::regex_match(std::string(status.message()),
                               std::regex("collective #[0-9]+ AllReduce node 'allreduce/fusion_3' "
                                          "\\(#812\\) did not finish within 0.05 s: a rank died "
                                          "or took another path")))
      << status;
  EXPECT_FALSE(slow.done());
  EXPECT_TRUE(slow.Wait(milliseconds(10000)).ok());  // it does finish later
}

TEST(CollectiveQueueTest, DestructorFinishesWhatWasSubmitted) {
  int runs = 0;
  {
    CollectiveQueue queue;
    for (int i = 0; i < 5; ++i) {
      queue.Submit("n", [&runs] {
        std::this_thread::sleep_for(milliseconds(2));
        ++runs;
        return absl::OkStatus();
      });
    }
  }
  EXPECT_EQ(runs, 5);
}

// A collective that timed out may never return (a stopped rank): destroying its queue must not
// wait for it, so that the error reaches the report; what was still pending is dropped.
TEST(CollectiveQueueTest, DestructorLeavesACollectiveThatTimedOut) {
  auto release = std::make_shared<std::promise<void>>();
  auto pending_ran = std::make_shared<std::atomic<bool>>(false);
  const auto start = std::chrono::steady_clock::now();
  {
    CollectiveQueue queue;
    CollectiveHandle stuck = queue.Submit("stuck", [released = release->get_future().share()] {
      released.wait();
      return absl::OkStatus();
    });
    queue.Submit("after", [pending_ran] {
      pending_ran->store(true);
      return absl::OkStatus();
    });
    EXPECT_TRUE(absl::IsDeadlineExceeded(stuck.Wait(milliseconds(20))));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(5000));
  release->set_value();  // the left thread ends, without running what was pending
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_FALSE(pending_ran->load());
}

TEST(CollectiveQueueTest, DefaultHandleIsDone) {
  CollectiveHandle handle;
  EXPECT_TRUE(handle.done());
  EXPECT_TRUE(handle.Wait(milliseconds(0)).ok());
}

}  // namespace
}  // namespace lockstep::parallel
