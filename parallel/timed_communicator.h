#pragma once

// A communicator whose every collective runs on a queue thread of its own and is waited for with
// the collective timeout (CommOptions::collective_timeout), as the graph's collectives are: when a
// rank died, took another path or was stopped (SIGSTOP), the others end the wait with the error
// that names the collective and where each rank is (CollectiveHandle::Wait, parallel/watchdog.h)
// instead of hanging. Context::HostWorld is one under MPI, so the collectives outside the graph
// (the settings and outcome agreements, the checkpoint commit, the evaluation counts, the
// running-statistics agreement) are watched like those inside it.

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "parallel/collective_queue.h"
#include "parallel/communicator.h"

namespace lockstep::parallel {

class TimedCommunicator : public Communicator {
 public:
  // `watchdog`: the context's, for the report after a timeout.
  TimedCommunicator(std::shared_ptr<Communicator> inner, std::chrono::milliseconds timeout,
                    std::shared_ptr<const Watchdog> watchdog)
      : inner_(std::move(inner)), timeout_(timeout), queue_(std::move(watchdog)) {}

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  Device device() const override { return inner_->device(); }
  const char* backend() const override { return inner_->backend(); }

  absl::Status AllReduce(const Tensor& inout, ReduceOp op) override;
  absl::Status AllGather(const Tensor& input, const Tensor& output) override;
  absl::Status Broadcast(const Tensor& inout, int root) override;
  absl::Status ReduceScatter(const Tensor& input, const Tensor& output, ReduceOp op) override;
  absl::Status Barrier() override;

 private:
  // Runs `collective` (which holds its tensors by value: after a timeout the queue thread may
  // still use them) and waits for it.
  absl::Status Run(absl::string_view what, size_t bytes, std::function<absl::Status()> collective);

  std::shared_ptr<Communicator> inner_;
  std::chrono::milliseconds timeout_;
  CollectiveQueue queue_;
};

}  // namespace lockstep::parallel
