#include "parallel/collective_queue.h"

#include <gtest/gtest.h>

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

TEST(CollectiveQueueTest, DefaultHandleIsDone) {
  CollectiveHandle handle;
  EXPECT_TRUE(handle.done());
  EXPECT_TRUE(handle.Wait(milliseconds(0)).ok());
}

}  // namespace
}  // namespace lockstep::parallel
