#pragma once

// What every stream-ordered collective kernel starts from: the device collectives of the node's
// group (its "group" attribute) on the kernel's device.

#include "graph/kernel.h"
#include "parallel/device_collectives.h"

namespace lockstep::parallel {

// Fails, naming the node, when the group's communicator queues no device collectives.
absl::StatusOr<DeviceCollectives*> DeviceCollectivesFor(const Node& node, const KernelContext& ctx);

}  // namespace lockstep::parallel
