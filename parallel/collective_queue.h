#pragma once

// Runs collectives on a thread of its own, in submission order, so that communication
// overlaps computation (DESIGN.md: "a communication thread on CPU"). One queue per
// communicator: every rank submits the same collectives in the same order, so the order in
// which they reach the communicator matches across ranks.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/status.h"
#include "core/whereabouts.h"
#include "parallel/watchdog.h"

namespace lockstep::parallel {

// The outcome of one submitted collective.
class CollectiveHandle {
 public:
  // Blocks until the collective finished or `timeout` passed (CommOptions::collective_timeout,
  // parallel/options.h). A timeout is a
  // DeadlineExceeded error naming the collective (a rank died or took another path) and, in a
  // multi-rank job, where each rank is (parallel/watchdog.h).
  absl::Status Wait(std::chrono::milliseconds timeout);
  bool done() const;

 private:
  friend class CollectiveQueue;
  struct State {
    std::mutex mutex;
    std::condition_variable cv;
    bool done = false;
    absl::Status status;
    std::string label;
    int64_t sequence = 0;                                // Whereabouts::IssueCollective
    std::shared_ptr<std::atomic<bool>> queue_abandoned;  // set by a Wait that timed out
    std::shared_ptr<const Watchdog> watchdog;            // the queue's
  };
  std::shared_ptr<State> state_;
};

class CollectiveQueue {
 public:
  // `watchdog` (the context's; null for none) describes where every rank is after a timeout.
  explicit CollectiveQueue(std::shared_ptr<const Watchdog> watchdog = nullptr);
  // Finishes what was submitted, then joins; except after a Wait timed out: its collective may
  // never return (a rank died or was stopped), so the thread is left to it, and to the process's
  // end, and what is still pending is dropped. That lets the error reach the binary's report
  // (parallel::ReportFatal) instead of hanging in the destructors on the way.
  ~CollectiveQueue();
  CollectiveQueue(const CollectiveQueue&) = delete;
  CollectiveQueue& operator=(const CollectiveQueue&) = delete;

  // `label` names the collective in errors ("AllReduce node 'allreduce/fusion_3' (#812)").
  CollectiveHandle Submit(std::string label, std::function<absl::Status()> collective);

 private:
  struct Work {
    std::function<absl::Status()> run;
    std::shared_ptr<CollectiveHandle::State> state;
  };
  // What the thread shares with the queue; the thread keeps it alive when it is left running.
  struct Shared {
    explicit Shared(std::shared_ptr<Whereabouts> whereabouts)
        : whereabouts(std::move(whereabouts)) {}
    const std::shared_ptr<Whereabouts> whereabouts;  // the watchdog's, or the queue's own
    std::mutex mutex;
    std::condition_variable cv;
    std::deque<Work> pending;
    bool stopping = false;
    std::shared_ptr<std::atomic<bool>> abandoned = std::make_shared<std::atomic<bool>>(false);
  };
  static void Loop(std::shared_ptr<Shared> shared);

  std::shared_ptr<const Watchdog> watchdog_;
  std::shared_ptr<Shared> shared_;
  std::thread thread_;
};

}  // namespace lockstep::parallel
