#pragma once

// Device collectives on the stand-in device (stand_in_device.h) over MPI, in place of NCCL on a
// GPU: each collective is queued on the device's stream and runs there through the host
// communicator, numbered and watched by the same CollectiveWatch as NCCL's, so the host-side
// logic above DeviceCollectives (the stream-ordered kernels, the executor's replay and its
// agreement, the watch's timeout and abort) runs on machines without a GPU, under mpirun.
//
// An abort (the watch's, after a timeout) stops the stream from starting more collectives; one
// already inside MPI finishes when its peers arrive, as NCCL's abort cannot be copied over MPI.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "parallel/collective_watch.h"
#include "parallel/communicator.h"
#include "parallel/device_collectives.h"

namespace lockstep::stand_in {

class MpiStandIn : public parallel::Communicator, public parallel::DeviceCollectives {
 public:
  // `host`: an untimed host communicator over every rank (the context's MPI one); `watchdog`:
  // the context's.
  MpiStandIn(std::shared_ptr<parallel::Communicator> host, std::chrono::milliseconds timeout,
             parallel::CollectiveWatch::FailureHandler on_failure,
             std::shared_ptr<const parallel::Watchdog> watchdog);
  ~MpiStandIn() override;  // waits for what the stream still runs

  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  Device device() const override;
  const char* backend() const override { return "mpi-stand-in"; }

  // Blocking, as NcclCommunicator's: queued on the stream and waited for under the watch.
  absl::Status AllReduce(const Tensor& inout, parallel::ReduceOp op) override;
  absl::Status AllGather(const Tensor& input, const Tensor& output) override;
  absl::Status Broadcast(const Tensor& inout, int root) override;
  absl::Status ReduceScatter(const Tensor& input, const Tensor& output,
                             parallel::ReduceOp op) override;
  absl::Status Barrier() override;

  absl::StatusOr<std::unique_ptr<Done>> MakeDone() override;
  absl::StatusOr<std::string> EnqueueAllReduce(const std::vector<Tensor>& inouts,
                                               parallel::ReduceOp op, Done& done,
                                               const StreamWork& before,
                                               const StreamWork& after_reduce) override;
  absl::Status ComputeWaitsFor(Done& done) override;
  absl::Status WatchLaunched(const std::string& label) override;
  absl::Status Usable() override;
  absl::StatusOr<bool> OnEveryRank(bool mine) override;
  // One stream: this.
  absl::StatusOr<DeviceCollectives*> Urgent() override { return this; }

 private:
  class Probe;
  class Mark;

  // Queues `work` (its status goes to the probe) and watches it as one collective `label`;
  // outside a recording only.
  absl::StatusOr<int64_t> QueueWatched(std::string label, std::function<absl::Status()> work);
  // Runs `collective` on the stream and waits for it under the watch.
  absl::Status Run(absl::string_view collective, size_t bytes,
                   std::function<absl::Status()> launch);
  // Called on the stream by every piece of work: records the first error; false once aborted.
  bool Runs(const std::function<absl::Status()>& work);

  std::shared_ptr<parallel::Communicator> host_;
  std::unique_ptr<Probe> probe_;
  std::unique_ptr<parallel::CollectiveWatch> watch_;
  std::mutex mutex_;  // orders queueing, as NCCL calls on one communicator are
  // Wakes ComputeWaitsFor when a Done is reached or the watch fails.
  std::mutex done_mutex_;
  std::condition_variable done_changed_;
};

}  // namespace lockstep::stand_in
