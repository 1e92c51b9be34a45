#include "parallel/collective_queue.h"

#include <utility>

#include "core/whereabouts.h"
#include "parallel/watchdog.h"

namespace lockstep::parallel {

absl::Status CollectiveHandle::Wait(std::chrono::milliseconds timeout) {
  if (state_ == nullptr) return absl::OkStatus();  // nothing was submitted
  std::unique_lock<std::mutex> lock(state_->mutex);
  if (!state_->cv.wait_for(lock, timeout, [this] { return state_->done; })) {
    state_->queue_abandoned->store(true);
    return absl::DeadlineExceededError(absl::StrCat(
        "collective #", state_->sequence, " ", state_->label, " did not finish within ",
        timeout.count() / 1000.0, " s: a rank died or took another path",
        DescribeWhereRanksAre(state_->watchdog.get(), state_->sequence)));
  }
  return state_->status;
}

bool CollectiveHandle::done() const {
  if (state_ == nullptr) return true;
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->done;
}

CollectiveQueue::CollectiveQueue(std::shared_ptr<const Watchdog> watchdog)
    : watchdog_(std::move(watchdog)),
      shared_(std::make_shared<Shared>(WhereaboutsFor(watchdog_.get()))),
      thread_([shared = shared_] { Loop(shared); }) {}

CollectiveQueue::~CollectiveQueue() {
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->stopping = true;
  }
  shared_->cv.notify_one();
  if (shared_->abandoned->load()) {
    thread_.detach();
  } else {
    thread_.join();
  }
}

CollectiveHandle CollectiveQueue::Submit(std::string label,
                                         std::function<absl::Status()> collective) {
  CollectiveHandle handle;
  handle.state_ = std::make_shared<CollectiveHandle::State>();
  handle.state_->sequence = shared_->whereabouts->IssueCollective(label);
  handle.state_->label = std::move(label);
  handle.state_->queue_abandoned = shared_->abandoned;
  handle.state_->watchdog = watchdog_;
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->pending.push_back({std::move(collective), handle.state_});
  }
  shared_->cv.notify_one();
  return handle;
}

void CollectiveQueue::Loop(std::shared_ptr<Shared> shared) {
  while (true) {
    Work work;
    {
      std::unique_lock<std::mutex> lock(shared->mutex);
      shared->cv.wait(lock, [&] { return shared->stopping || !shared->pending.empty(); });
      // Stopping: everything submitted has run, or the queue was abandoned after a timeout.
      if (shared->pending.empty() || (shared->stopping && shared->abandoned->load())) return;
      work = std::move(shared->pending.front());
      shared->pending.pop_front();
    }
    absl::Status status = work.run();
    shared->whereabouts->CompleteCollective(work.state->sequence);
    {
      std::lock_guard<std::mutex> lock(work.state->mutex);
      work.state->status = std::move(status);
      work.state->done = true;
    }
    work.state->cv.notify_all();
  }
}

}  // namespace lockstep::parallel
