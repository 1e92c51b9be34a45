#pragma once

// A communication group as graph nodes name it (attribute "group", as in MindSpore): a
// communicator plus the queue that puts its collectives in one order. Every collective of a
// group goes through its queue, whether a kernel overlaps it with computation (the gradient
// AllReduce) or waits for it at once (SyncBatchNorm's statistics): two threads never call the
// communicator at the same time, and every rank issues the same sequence.

#include <memory>
#include <string>

#include "core/device.h"
#include "core/status.h"
#include "parallel/collective_queue.h"
#include "parallel/communicator.h"

namespace lockstep::parallel {

// The group of all ranks.
inline constexpr char kWorldGroup[] = "world";

struct CommGroup {
  std::shared_ptr<Communicator> communicator;
  std::unique_ptr<CollectiveQueue> queue;

  // Runs `collective` through the queue and waits for it (with the collective timeout).
  absl::Status RunNow(std::string label, std::function<absl::Status()> collective);
};

// Whether collectives that can overlap computation (the gradient AllReduce) run on the
// communication thread while the backward goes on (the default), or at their place in the step
// while the compute thread waits ($LOCKSTEP_OVERLAP_COMM=0). Waiting can be a little faster
// when the communication thread has no core of its own: sharing one with the backward, its
// copying, summing and cache traffic slow the backward by about what they hide (BENCHMARKS.md).
bool OverlapCommunication();

// The group for tensors on `device`, created on first use from the current parallel::Context
// (a world of one when parallel::Init was not called). Lives until the process exits.
absl::StatusOr<CommGroup*> FindGroup(absl::string_view name, Device device);

}  // namespace lockstep::parallel
