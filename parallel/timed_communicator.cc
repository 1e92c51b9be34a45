#include "parallel/timed_communicator.h"

#include <utility>

namespace lockstep::parallel {

absl::Status TimedCommunicator::Run(absl::string_view what, size_t bytes,
                                    std::function<absl::Status()> collective) {
  std::string label = absl::StrCat(what, " of ", bytes, " bytes outside the graph");
  return queue_.Submit(std::move(label), std::move(collective)).Wait(timeout_);
}

absl::Status TimedCommunicator::AllReduce(const Tensor& inout, ReduceOp op) {
  return Run("AllReduce", inout.nbytes(),
             [inner = inner_, inout, op] { return inner->AllReduce(inout, op); });
}

absl::Status TimedCommunicator::AllGather(const Tensor& input, const Tensor& output) {
  return Run("AllGather", input.nbytes(),
             [inner = inner_, input, output] { return inner->AllGather(input, output); });
}

absl::Status TimedCommunicator::Broadcast(const Tensor& inout, int root) {
  return Run("Broadcast", inout.nbytes(),
             [inner = inner_, inout, root] { return inner->Broadcast(inout, root); });
}

absl::Status TimedCommunicator::ReduceScatter(const Tensor& input, const Tensor& output,
                                              ReduceOp op) {
  return Run("ReduceScatter", input.nbytes(), [inner = inner_, input, output, op] {
    return inner->ReduceScatter(input, output, op);
  });
}

absl::Status TimedCommunicator::Barrier() {
  return Run("Barrier", 0, [inner = inner_] { return inner->Barrier(); });
}

}  // namespace lockstep::parallel
