#include "parallel/ops/device_collective_kernel.h"

#include "parallel/comm_group.h"

namespace lockstep::parallel {

absl::StatusOr<DeviceCollectives*> DeviceCollectivesFor(const Node& node,
                                                        const KernelContext& ctx) {
  LS_ASSIGN_OR_RETURN(CommGroup * group, GroupFor(node, ctx));
  auto* collectives = dynamic_cast<DeviceCollectives*>(group->communicator.get());
  if (collectives == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(node.Describe(), " on ", ctx.device.ToString(),
                     " needs a communicator with stream-ordered collectives, group '",
                     node.attrs.GetString("group"), "' has ", group->communicator->backend()));
  }
  return collectives;
}

}  // namespace lockstep::parallel
