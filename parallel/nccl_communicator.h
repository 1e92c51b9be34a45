#pragma once

// Collectives over device memory with NCCL (CUDA builds only). The Communicator calls are
// blocking, as that interface says: each waits for the work queued on the device's compute
// stream, enqueues on the communicator's own stream and waits for it. Kernels use the
// stream-ordered DeviceCollectives calls instead, which keep the host out of it.
//
// Nothing can hang: the communicator is created non-blocking and its set-up waited for with the
// collective timeout, and every collective is numbered and watched (collective_watch.h), so a
// dead or stuck peer ends every rank with the report of where each rank is. The watch's abort
// never waits behind a call in progress: a call settling (Settle) gives up as soon as an abort
// begins. At exit the communicator is finalized within the timeout, then destroyed, or aborted
// when a peer never finalizes. Events are taken per operation from a pool, never shared between
// threads.

#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "parallel/collective_watch.h"
#include "parallel/communicator.h"
#include "parallel/device_collectives.h"

namespace lockstep::parallel {

class NcclCommunicator : public Communicator, public DeviceCollectives {
 public:
  // Collective over the ranks of `bootstrap` (a host communicator): rank 0 makes the NCCL
  // unique id, bootstrap.Broadcast hands it to the others, and every rank joins with CUDA
  // device `device_index`. `timeout` (CommOptions::collective_timeout) bounds the set-up and
  // every collective; `on_failure` is CommOptions::on_device_failure, `watchdog` the context's
  // (CollectiveWatch).
  static absl::StatusOr<std::shared_ptr<NcclCommunicator>> Create(
      Communicator& bootstrap, int device_index, std::chrono::milliseconds timeout,
      CollectiveWatch::FailureHandler on_failure = {},
      std::shared_ptr<const Watchdog> watchdog = nullptr);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Device device() const override { return device_; }
  const char* backend() const override { return "nccl"; }

  absl::Status AllReduce(const Tensor& inout, ReduceOp op) override;
  absl::Status AllGather(const Tensor& input, const Tensor& output) override;
  absl::Status Broadcast(const Tensor& inout, int root) override;
  absl::Status ReduceScatter(const Tensor& input, const Tensor& output, ReduceOp op) override;
  absl::Status Barrier() override;

  // DeviceCollectives: the collectives' stream is the communicator's own, a Done is a CUDA
  // event. While the compute stream is being captured into a CUDA graph (Executor::ReplayAfter)
  // nothing runs, so nothing is watched: WatchLaunched watches each launch of the graph.
  absl::StatusOr<std::unique_ptr<Done>> MakeDone() override;
  absl::StatusOr<std::string> EnqueueAllReduce(const std::vector<Tensor>& inouts, ReduceOp op,
                                               Done& done, const StreamWork& before,
                                               const StreamWork& after_reduce) override;
  absl::Status ComputeWaitsFor(Done& done) override;
  absl::Status WatchLaunched(const std::string& label) override;
  absl::Status Usable() override;
  absl::StatusOr<bool> OnEveryRank(bool mine) override;
  // A communicator split off this one (ncclCommSplit: channels of its own, so its kernels do not
  // wait behind this one's), on a stream of the device's greatest priority.
  absl::StatusOr<DeviceCollectives*> Urgent() override;

 private:
  class Probe;  // the watch's view of comm_ and stream_ (nccl_communicator.cc)

  NcclCommunicator(int rank, int size, Device device, std::chrono::milliseconds timeout,
                   CollectiveWatch::FailureHandler on_failure,
                   std::shared_ptr<const Watchdog> watchdog);
  // Joins the communicator through `join` (ncclCommInitRankConfig or ncclCommSplit, given the
  // non-blocking config) with a stream of `priority`, then starts the watch.
  using JoinFn = std::function<ncclResult_t(ncclComm_t*, ncclConfig_t*)>;
  absl::Status Join(const JoinFn& join, const char* call, int priority);
  // Runs `launch`, which enqueues NCCL calls on stream_ after the compute stream's work so far,
  // and waits for it under the watch; errors name the collective and its bytes.
  absl::Status Run(absl::string_view collective, size_t bytes,
                   const std::function<absl::Status()>& launch);
  // Under comm_mutex_: Usable.
  absl::Status UsableLocked() const;
  // Under comm_mutex_: orders stream_ after the work queued on `after` so far.
  absl::Status Follow(cudaStream_t after);
  // Under comm_mutex_: numbers the work queued on stream_ so far as one collective, watched.
  absl::StatusOr<int64_t> Watch(std::string label);
  // A non-blocking communicator's call may return while its work is still being set up: waits
  // for that, within the timeout, unless an abort begins meanwhile.
  absl::Status Settle(ncclResult_t result, const char* call, const char* file, int line);
  // ncclCommFinalize, settled: every peer has finished with this rank (at exit).
  absl::Status Finalize();

  int rank_;
  int size_;
  Device device_;
  std::chrono::milliseconds timeout_;
  CollectiveWatch::FailureHandler on_failure_;
  std::shared_ptr<const Watchdog> watchdog_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  // Held around every NCCL call on comm_, so that the watch's abort never meets one half-made.
  std::mutex comm_mutex_;
  // Set when the watch begins its abort: Settle stops waiting, so comm_mutex_ is soon free.
  std::atomic<bool> aborting_ = false;
  std::unique_ptr<Probe> probe_;
  std::unique_ptr<CollectiveWatch> watch_;
  Tensor barrier_;  // (1) i32 on device_: Barrier is an AllReduce of it
  Tensor flag_;     // (1) i32 on device_: OnEveryRank's minimum over the ranks
  std::mutex urgent_mutex_;
  std::shared_ptr<NcclCommunicator> urgent_;  // Urgent's, once made
};

// An NCCL result as a Status naming the call, where it was made and NCCL's explanation.
absl::Status NcclErrorStatus(ncclResult_t result, const char* call, const char* file, int line);

}  // namespace lockstep::parallel

// In NcclCommunicator's own calls: the call, settled (NcclCommunicator::Settle).
#define NCCL_SETTLE(expr) LS_RETURN_IF_ERROR(Settle((expr), #expr, __FILE__, __LINE__))

#define NCCL_RETURN_IF_ERROR(expr)                                                              \
  do {                                                                                          \
    ncclResult_t ls_nccl_result_ = (expr);                                                      \
    if (ls_nccl_result_ != ncclSuccess) {                                                       \
      return ::lockstep::parallel::NcclErrorStatus(ls_nccl_result_, #expr, __FILE__, __LINE__); \
    }                                                                                           \
  } while (0)
