#include "parallel/comm_group.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <string_view>
#include <utility>

#include "core/logging.h"
#include "parallel/context.h"

namespace lockstep::parallel {

absl::Status CommGroup::RunNow(std::string label, std::function<absl::Status()> collective) {
  return queue->Submit(std::move(label), std::move(collective)).Wait(CollectiveTimeout());
}

bool OverlapCommunication() {
  const char* text = std::getenv("LOCKSTEP_OVERLAP_COMM");
  if (text == nullptr || text == std::string_view("1")) return true;
  if (text == std::string_view("0")) return false;
  LS_LOG(Warning) << "LOCKSTEP_OVERLAP_COMM='" << text << "' is neither 1 nor 0; overlapping";
  return true;
}

absl::StatusOr<CommGroup*> FindGroup(absl::string_view name, Device device) {
  if (name != kWorldGroup) {
    return absl::NotFoundError(
        absl::StrCat("no communication group '", name, "' (only '", kWorldGroup, "' exists)"));
  }
  // Never destroyed: queues may outlive static destruction order, and MPI is finalized at exit.
  static auto* groups = new std::map<std::pair<DeviceType, int>, CommGroup>();
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  auto key = std::make_pair(device.type, device.index);
  auto it = groups->find(key);
  if (it == groups->end()) {
    LS_ASSIGN_OR_RETURN(std::shared_ptr<Communicator> communicator, CurrentContext().World(device));
    it = groups->emplace(key, CommGroup{communicator, std::make_unique<CollectiveQueue>()}).first;
  }
  return &it->second;
}

}  // namespace lockstep::parallel
