#include "parallel/comm_group.h"

#include <utility>

namespace lockstep::parallel {

absl::Status CommGroup::RunNow(std::string label, std::function<absl::Status()> collective) {
  return queue->Submit(std::move(label), std::move(collective)).Wait(options.collective_timeout);
}

absl::StatusOr<CommGroup*> CommGroups::Find(absl::string_view name, Device device) {
  if (name != kWorldGroup) {
    return absl::NotFoundError(
        absl::StrCat("no communication group '", name, "' (only '", kWorldGroup, "' exists)"));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  auto key = std::make_pair(device.type, device.index);
  auto it = groups_.find(key);
  if (it == groups_.end()) {
    auto provided = provided_.find(key);
    std::shared_ptr<Communicator> communicator;
    if (provided != provided_.end()) {
      communicator = provided->second;
    } else {
      LS_ASSIGN_OR_RETURN(communicator, context_.World(device));
    }
    it = groups_
             .emplace(key, CommGroup{communicator,
                                     std::make_unique<CollectiveQueue>(context_.watchdog()),
                                     context_.comm_options()})
             .first;
  }
  return &it->second;
}

void CommGroups::Provide(std::shared_ptr<Communicator> world) {
  std::lock_guard<std::mutex> lock(mutex_);
  const Device device = world->device();
  provided_[{device.type, device.index}] = std::move(world);
}

absl::StatusOr<CommGroup*> GroupFor(const Node& node, const KernelContext& ctx) {
  // LowerKernels names the node in errors.
  LS_ASSIGN_OR_RETURN(const std::shared_ptr<CommGroups>* groups,
                      ctx.config.Require<std::shared_ptr<CommGroups>>("the collective kernel"));
  return (*groups)->Find(node.attrs.GetString("group"), ctx.device);
}

bool OverlapCommunication(const KernelContext& ctx) {
  const ParallelOptions* options = ctx.config.Get<ParallelOptions>();
  return options == nullptr || options->overlap_communication;
}

}  // namespace lockstep::parallel
