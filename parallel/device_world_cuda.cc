#include <string>
#include <vector>

#include "core/host_name.h"
#include "core/logging.h"
#include "ops/cuda/cuda_status.h"
#include "parallel/agree.h"
#include "parallel/device_world.h"
#include "parallel/gpu_assignment.h"
#include "parallel/nccl_communicator.h"

namespace lockstep::parallel {
namespace {

// The UUIDs of the devices this process sees, as nvidia-smi -L prints them; none without a
// driver.
std::vector<std::string> VisibleGpus() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) return {};
  std::vector<std::string> uuids;
  for (int device = 0; device < count; ++device) {
    cudaDeviceProp properties;
    if (cudaGetDeviceProperties(&properties, device) != cudaSuccess) return {};
    std::string uuid = "GPU-";
    for (int i = 0; i < 16; ++i) {
      if (i == 4 || i == 6 || i == 8 || i == 10) uuid += '-';
      absl::StrAppend(&uuid,
                      absl::Hex(static_cast<uint8_t>(properties.uuid.bytes[i]), absl::kZeroPad2));
    }
    uuids.push_back(std::move(uuid));
  }
  return uuids;
}

}  // namespace

bool BuiltWithCuda() { return true; }

DeviceWorld DeviceWorldOfOne(Communicator& host_world, const CommOptions& options) {
  if (!CudaAvailable()) return {};
  absl::StatusOr<std::shared_ptr<NcclCommunicator>> nccl = NcclCommunicator::Create(
      host_world, 0, options.collective_timeout, options.on_device_failure);
  if (!nccl.ok()) {
    LS_LOG(Warning) << "no NCCL world of one on cuda:0, computing on the CPU: "
                    << nccl.status().message();
    return {};
  }
  return DeviceWorld{.device = Device::CUDA(0), .world = *nccl};
}

absl::StatusOr<DeviceWorld> StartDeviceWorld(const RankPlace& place, Communicator& host_world,
                                             const CommOptions& options,
                                             std::shared_ptr<const Watchdog> watchdog) {
  const RankGpuView mine{.rank = place.rank,
                         .host = HostName(),
                         .local_rank = place.local_rank,
                         .local_size = place.local_size,
                         .gpus = VisibleGpus(),
                         .may_share_gpu = options.ranks_may_share_gpu};
  LS_ASSIGN_OR_RETURN(std::vector<std::string> texts,
                      GatherStrings(EncodeGpuView(mine), host_world));
  std::vector<RankGpuView> views;
  for (const std::string& text : texts) {
    LS_ASSIGN_OR_RETURN(RankGpuView view, DecodeGpuView(text));
    views.push_back(std::move(view));
  }
  absl::StatusOr<GpuAssignment> assignment = AssignGpus(views);
  if (!assignment.ok()) return DeviceWorld{.gpu_error = assignment.status()};
  DeviceWorld gpus{.cpu_reason = assignment->cpu_reason};
  if (assignment->device.empty()) return gpus;
  const int index = assignment->device[place.rank];
  gpus.device = Device::CUDA(index);
  CUDA_RETURN_IF_ERROR(cudaSetDevice(index));
  LS_ASSIGN_OR_RETURN(gpus.world,
                      NcclCommunicator::Create(host_world, index, options.collective_timeout,
                                               options.on_device_failure, std::move(watchdog)));
  return gpus;
}

}  // namespace lockstep::parallel
