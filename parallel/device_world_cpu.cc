#include "parallel/device_world.h"

namespace lockstep::parallel {

bool BuiltWithCuda() { return false; }

DeviceWorld DeviceWorldOfOne(Communicator&, const CommOptions&) { return {}; }

absl::StatusOr<DeviceWorld> StartDeviceWorld(const RankPlace&, Communicator&, const CommOptions&,
                                             std::shared_ptr<const Watchdog>) {
  return DeviceWorld{};
}

}  // namespace lockstep::parallel
