#pragma once

// The timeout of collectives that run on a device (NCCL), as the collective queue's is for the
// host's. A device collective is queued on a stream and the host goes on, so nothing on the host
// waits where a timeout could fire; a dead or stuck peer leaves the kernel spinning and the rank
// blocked in its next stream synchronisation, forever. CollectiveWatch numbers each collective
// as the host queue does (core/whereabouts.h), and its thread polls the communicator through a
// CollectiveProbe: completions in issue order, and the communicator's own asynchronous errors.
// When the oldest unfinished collective is older than the timeout, or the communicator reports
// an error, it builds the same "where every rank is" report as a host timeout, aborts the
// communicator (so that streams waiting on it return), fails every waiter and every later
// collective with that report, and calls the failure handler (CommOptions::on_device_failure).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "core/status.h"
#include "core/whereabouts.h"
#include "parallel/watchdog.h"

namespace lockstep::parallel {

// What the watch asks of a device communicator; NCCL's is in nccl_communicator.cc, tests use
// doubles.
class CollectiveProbe {
 public:
  virtual ~CollectiveProbe() = default;
  // Whether collective `sequence` (a number CollectiveWatch::Issue gave) has finished on the
  // device; false while it is unknown to the probe. Asked in issue order.
  virtual absl::StatusOr<bool> Finished(int64_t sequence) = 0;
  // An error the communicator met on its own (a peer's connection lost), OK while none.
  virtual absl::Status AsyncError() = 0;
  // Ends the communicator's outstanding work, so that streams waiting on it go on. It may block
  // (NCCL's waits for the CUDA graphs that hold its collectives to go); the watch publishes the
  // failure after a second even so.
  virtual void Abort() = 0;
};

class CollectiveWatch {
 public:
  // Runs once, on the watch's thread, after the communicator was aborted (or its abort has
  // blocked for a second) and the failure was published.
  using FailureHandler = std::function<void(const absl::Status&)>;

  // `probe` must outlive the watch. `timeout` is CommOptions::collective_timeout; `watchdog`
  // (the context's, or null) describes where every rank is in the failure.
  CollectiveWatch(CollectiveProbe& probe, std::chrono::milliseconds timeout,
                  FailureHandler on_failure = {},
                  std::shared_ptr<const Watchdog> watchdog = nullptr,
                  std::chrono::milliseconds poll_every = std::chrono::milliseconds(10));
  ~CollectiveWatch();
  CollectiveWatch(const CollectiveWatch&) = delete;
  CollectiveWatch& operator=(const CollectiveWatch&) = delete;

  // Numbers a collective just queued on the device and starts its clock; `label` names it in
  // errors ("AllReduce of 4.0 MB").
  int64_t Issue(std::string label);
  // Blocks until collective `sequence` finished; the watch's failure if it fails first.
  absl::Status WaitFor(int64_t sequence);
  // OK until a collective failed; then that failure, for every later collective.
  absl::Status failure() const;

 private:
  struct Pending {
    int64_t sequence;
    std::string label;
    std::chrono::steady_clock::time_point issued;
  };
  void Loop();
  // One poll: retires finished collectives; the failure, if one is found.
  absl::Status Poll();
  void Fail(absl::Status failure);

  CollectiveProbe& probe_;
  const std::chrono::milliseconds timeout_;
  const FailureHandler on_failure_;
  const std::shared_ptr<const Watchdog> watchdog_;
  const std::shared_ptr<Whereabouts> whereabouts_;  // the watchdog's, or the watch's own
  const std::chrono::milliseconds poll_every_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Pending> pending_;  // issued and unfinished, in issue order
  absl::Status failure_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace lockstep::parallel
