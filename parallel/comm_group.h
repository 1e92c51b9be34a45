#pragma once

// A communication group as graph nodes name it (attribute "group", as in MindSpore): a
// communicator plus the queue that puts its collectives in one order. Every collective of a
// group goes through its queue, whether a kernel overlaps it with computation (the gradient
// AllReduce) or waits for it at once (SyncBatchNorm's statistics): two threads never call the
// communicator at the same time, and every rank issues the same sequence.
//
// The groups belong to a CommGroups object that whoever compiles graphs with collectives owns
// (train::Model does) and puts in CompileOptions::config as a std::shared_ptr<CommGroups>; the
// collective kernels find their group there (GroupFor), never in a process-wide table.
//
//   auto groups = std::make_shared<parallel::CommGroups>(context);
//   CompileOptions compile{.device = device};
//   compile.config.Set(groups);

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "core/device.h"
#include "core/status.h"
#include "graph/kernel.h"
#include "parallel/collective_queue.h"
#include "parallel/communicator.h"
#include "parallel/context.h"
#include "parallel/options.h"

namespace lockstep::parallel {

// The group of all ranks.
inline constexpr char kWorldGroup[] = "world";

struct CommGroup {
  std::shared_ptr<Communicator> communicator;
  std::unique_ptr<CollectiveQueue> queue;
  // The Context's: the timeout of every wait.
  CommOptions options;

  // Runs `collective` through the queue and waits for it (with the collective timeout).
  absl::Status RunNow(std::string label, std::function<absl::Status()> collective);
};

class CommGroups {
 public:
  // Groups over the world communicators of `context`, which they keep alive. They must outlive
  // the executors whose kernels use them.
  explicit CommGroups(Context context) : context_(std::move(context)) {}
  CommGroups(const CommGroups&) = delete;
  CommGroups& operator=(const CommGroups&) = delete;

  // The group `name` for tensors on `device`, made on first use.
  absl::StatusOr<CommGroup*> Find(absl::string_view name, Device device);
  // Makes `world` the world communicator for tensors on its device, instead of the context's
  // (a device the context does not know: the device-collective tests' stand-in). Before the
  // group is first used.
  void Provide(std::shared_ptr<Communicator> world);
  const Context& context() const { return context_; }

 private:
  Context context_;
  std::mutex mutex_;
  std::map<std::pair<DeviceType, int>, CommGroup> groups_;
  std::map<std::pair<DeviceType, int>, std::shared_ptr<Communicator>> provided_;
};

// The group a collective node names (its "group" attribute) for tensors on the kernel's device,
// from the CommGroups in the compilation's config; an error when the config has none.
absl::StatusOr<CommGroup*> GroupFor(const Node& node, const KernelContext& ctx);

// Whether a collective kernel may overlap computation: the compilation's
// ParallelOptions::overlap_communication, true when its config has none.
bool OverlapCommunication(const KernelContext& ctx);

}  // namespace lockstep::parallel
