#include "parallel/collective_watch.h"

#include <algorithm>
#include <future>
#include <optional>
#include <utility>

#include "core/whereabouts.h"
#include "parallel/watchdog.h"

namespace lockstep::parallel {
namespace {

// How long a failure waits for the communicator's abort before it is published anyway.
constexpr auto kAbortWait = std::chrono::seconds(1);

}  // namespace

CollectiveWatch::CollectiveWatch(CollectiveProbe& probe, std::chrono::milliseconds timeout,
                                 FailureHandler on_failure,
                                 std::shared_ptr<const Watchdog> watchdog,
                                 std::chrono::milliseconds poll_every)
    : probe_(probe),
      timeout_(timeout),
      on_failure_(std::move(on_failure)),
      watchdog_(std::move(watchdog)),
      whereabouts_(WhereaboutsFor(watchdog_.get())),
      poll_every_(poll_every),
      thread_([this] { Loop(); }) {}

CollectiveWatch::~CollectiveWatch() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

int64_t CollectiveWatch::Issue(std::string label) {
  const int64_t sequence = whereabouts_->IssueCollective(label);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.push_back({sequence, std::move(label), std::chrono::steady_clock::now()});
  }
  changed_.notify_all();
  return sequence;
}

absl::Status CollectiveWatch::WaitFor(int64_t sequence) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] {
    return !failure_.ok() ||
           std::none_of(pending_.begin(), pending_.end(),
                        [&](const Pending& pending) { return pending.sequence == sequence; });
  });
  return failure_;
}

absl::Status CollectiveWatch::failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

void CollectiveWatch::Loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_ && failure_.ok()) {
    changed_.wait_for(lock, poll_every_);
    if (stopping_) return;
    lock.unlock();
    absl::Status failure = Poll();
    if (!failure.ok()) Fail(std::move(failure));
    lock.lock();
  }
}

absl::Status CollectiveWatch::Poll() {
  while (true) {
    Pending oldest;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (pending_.empty()) break;
      oldest = pending_.front();
    }
    absl::StatusOr<bool> finished = probe_.Finished(oldest.sequence);
    auto where = [&] {
      return absl::StrCat("device collective #", oldest.sequence, " ", oldest.label);
    };
    if (!finished.ok()) return Annotate(finished.status(), where());
    if (!*finished) {
      if (std::chrono::steady_clock::now() - oldest.issued <= timeout_) break;
      return absl::DeadlineExceededError(
          absl::StrCat(where(), " did not finish within ", timeout_.count() / 1000.0,
                       " s: a rank died or took another path",
                       DescribeWhereRanksAre(watchdog_.get(), oldest.sequence)));
    }
    whereabouts_->CompleteCollective(oldest.sequence);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      pending_.pop_front();
    }
    changed_.notify_all();
  }
  absl::Status async = probe_.AsyncError();
  if (async.ok()) return async;
  std::optional<Pending> oldest;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!pending_.empty()) oldest = pending_.front();
  }
  if (!oldest) return Annotate(async, "the device communicator, between collectives");
  return absl::Status(
      async.code(),
      absl::StrCat("device collective #", oldest->sequence, " ", oldest->label, ": ",
                   async.message(), DescribeWhereRanksAre(watchdog_.get(), oldest->sequence)));
}

// NCCL's abort can block: it waits until every CUDA graph that recorded one of the
// communicator's collectives is destroyed, which the rank's main thread does only once it meets
// the failure. So the abort runs on a thread of its own, and the failure is published when the
// abort ends or after kAbortWait, whichever comes first.
void CollectiveWatch::Fail(absl::Status failure) {
  std::promise<void> aborted;
  std::future<void> abort_done = aborted.get_future();
  std::thread abort([&] {
    probe_.Abort();
    aborted.set_value();
  });
  abort_done.wait_for(kAbortWait);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    failure_ = failure;
  }
  changed_.notify_all();
  if (on_failure_) on_failure_(failure);
  abort.join();
}

}  // namespace lockstep::parallel
