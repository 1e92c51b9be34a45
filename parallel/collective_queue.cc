#include "parallel/collective_queue.h"

#include <utility>

#include "core/whereabouts.h"
#include "parallel/watchdog.h"

namespace lockstep::parallel {

absl::Status CollectiveHandle::Wait(std::chrono::milliseconds timeout) {
  if (state_ == nullptr) return absl::OkStatus();  // nothing was submitted
  std::unique_lock<std::mutex> lock(state_->mutex);
  if (!state_->cv.wait_for(lock, timeout, [this] { return state_->done; })) {
    return absl::DeadlineExceededError(absl::StrCat(
        "collective #", state_->sequence, " ", state_->label, " did not finish within ",
        timeout.count() / 1000.0, " s: a rank died or took another path",
        DescribeWhereRanksAre(state_->sequence)));
  }
  return state_->status;
}

bool CollectiveHandle::done() const {
  if (state_ == nullptr) return true;
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->done;
}

CollectiveQueue::CollectiveQueue() : thread_([this] { Loop(); }) {}

CollectiveQueue::~CollectiveQueue() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

CollectiveHandle CollectiveQueue::Submit(std::string label,
                                         std::function<absl::Status()> collective) {
  CollectiveHandle handle;
  handle.state_ = std::make_shared<CollectiveHandle::State>();
  handle.state_->sequence = whereabouts::IssueCollective(label);
  handle.state_->label = std::move(label);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.push_back({std::move(collective), handle.state_});
  }
  cv_.notify_one();
  return handle;
}

void CollectiveQueue::Loop() {
  while (true) {
    Work work;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [this] { return stopping_ || !pending_.empty(); });
      if (pending_.empty()) return;  // stopping, and everything submitted has run
      work = std::move(pending_.front());
      pending_.pop_front();
    }
    absl::Status status = work.run();
    whereabouts::CompleteCollective(work.state->sequence);
    {
      std::lock_guard<std::mutex> lock(work.state->mutex);
      work.state->status = std::move(status);
      work.state->done = true;
    }
    work.state->cv.notify_all();
  }
}

}  // namespace lockstep::parallel
