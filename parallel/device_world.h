#pragma once

// The device side of a parallel context: the GPU each rank computes on and the communicator for
// its memory (NCCL), or why every rank stays on the CPU. Only the CUDA build looks for GPUs
// (device_world_cuda.cc); the CPU build's ranks compute on the CPU (device_world_cpu.cc).

#include <memory>
#include <string>

#include "core/device.h"
#include "core/status.h"
#include "parallel/communicator.h"
#include "parallel/options.h"
#include "parallel/watchdog.h"

namespace lockstep::parallel {

struct DeviceWorld {
  Device device = Device::CPU();
  std::shared_ptr<Communicator> world;  // null without a GPU
  absl::Status gpu_error;               // why the ranks' GPUs could not be assigned
  std::string cpu_reason;  // why every rank computes on the CPU although GPUs were seen
};

// Where a rank runs, for the assignment of GPUs.
struct RankPlace {
  int rank = 0;
  int local_rank = 0;
  int local_size = 1;
};

// Whether this build has the CUDA backend, for messages that say why there is no GPU.
bool BuiltWithCuda();

// A world of one: cuda:0 with NCCL of one rank where there is a GPU, so it runs the same
// collective kernels as many ranks.
DeviceWorld DeviceWorldOfOne(Communicator& host_world, const CommOptions& options);

// Every rank's GPUs gathered over `host_world` and assigned alike on every rank
// (gpu_assignment.h): all ranks start NCCL on their GPU, or none does. An assignment that fails
// is kept in gpu_error; only a failing collective or NCCL start is an error. NCCL's timeouts
// report where every rank is through `watchdog`.
absl::StatusOr<DeviceWorld> StartDeviceWorld(const RankPlace& place, Communicator& host_world,
                                             const CommOptions& options,
                                             std::shared_ptr<const Watchdog> watchdog);

}  // namespace lockstep::parallel
