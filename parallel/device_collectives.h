#pragma once

// Stream-ordered collectives, the interface between the collective kernels of a device with
// streams and the library that moves its memory. The kernels (parallel/ops/stream_all_reduce.h,
// SyncBatchNorm on CUDA) and the executor's replay agreement talk to this, never to NCCL, so the
// same host-side logic runs over NcclCommunicator on GPUs and over an MPI-backed stand-in on
// the CPU machines (tests/parallel/stand_in/).
//
// A collective queued here runs on the collectives' own stream once the work queued on the
// device's compute stream so far is done, and marks its end with a Done the compute stream can
// wait on: the host never waits inside a step. Every collective queued outside a recording
// (Backend::BeginCapture) is numbered and watched (collective_watch.h); a recorded one is
// watched at each launch (WatchLaunched).

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/status.h"
#include "core/tensor.h"
#include "parallel/communicator.h"

namespace lockstep::parallel {

class DeviceCollectives {
 public:
  // The end of one kernel's collective, which the compute stream can wait for. A kernel makes one
  // and reuses it every step (a recorded step refers to it).
  class Done {
   public:
    virtual ~Done() = default;
  };
  // Work queued on the collectives' stream (a cudaStream_t on CUDA; the device's own handle).
  using StreamWork = std::function<absl::Status(void* stream)>;

  virtual ~DeviceCollectives() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual Device device() const = 0;

  virtual absl::StatusOr<std::unique_ptr<Done>> MakeDone() = 0;
  // Reduces `inouts` in place, as one group, after the compute stream's work so far; `before`
  // and `after_reduce`, when not null, are queued right before and after the reduction (a narrower
  // wire dtype's conversions). Returns without waiting, with the collective's label ("AllReduce
  // of 4.0 MB").
  virtual absl::StatusOr<std::string> EnqueueAllReduce(const std::vector<Tensor>& inouts,
                                                       ReduceOp op, Done& done,
                                                       const StreamWork& before,
                                                       const StreamWork& after_reduce) = 0;
  // Work queued on the compute stream from now on starts after `done`; the host goes on.
  virtual absl::Status ComputeWaitsFor(Done& done) = 0;
  // Numbers and watches the collective `label` that a recording just launched on the compute
  // stream holds; it counts as finished when the launch has. Called right after the launch, once
  // per collective in the recording and in their order, as every rank does.
  virtual absl::Status WatchLaunched(const std::string& label) = 0;
  // OK while collectives may be queued: no failure seen, not aborted. Checked before a recording
  // holding collectives is launched.
  virtual absl::Status Usable() = 0;
  // Whether `mine` holds on every rank (the replay agreement); the host waits for it.
  virtual absl::StatusOr<bool> OnEveryRank(bool mine) = 0;
  // Collectives for what the compute stream waits on at once (SyncBatchNorm's statistics), which
  // must not queue behind gradient buckets still in flight: collectives of their own, over the
  // same ranks, on a stream that runs first, or this object where there is no such thing. Made
  // on first use, which is a collective call: every rank asks at the same point (kernels are
  // created in graph order).
  virtual absl::StatusOr<DeviceCollectives*> Urgent() = 0;
};

}  // namespace lockstep::parallel
