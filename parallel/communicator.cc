#include "parallel/communicator.h"

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_join.h"
#include "parallel/collective_util.h"

namespace lockstep::parallel {
namespace {

constexpr std::array<std::pair<ReduceOp, const char*>, 4> kReduceOps = {{
    {ReduceOp::kSum, "sum"},
    {ReduceOp::kMax, "max"},
    {ReduceOp::kMin, "min"},
    {ReduceOp::kAvg, "avg"},
}};

// A world of one: reductions and broadcasts leave the tensor as it is; gathers and scatters
// copy the one block. Arguments are checked as a real world would check them, so a program
// that is wrong fails the same way with one rank as with many.
class SelfCommunicator : public Communicator {
 public:
  explicit SelfCommunicator(Device device) : device_(device) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Device device() const override { return device_; }
  const char* backend() const override { return "self"; }

  absl::Status AllReduce(const Tensor& inout, ReduceOp op) override {
    return CheckAllReduce(*this, inout, op);
  }
  absl::Status AllGather(const Tensor& input, const Tensor& output) override {
    LS_RETURN_IF_ERROR(CheckAllGather(*this, input, output));
    return CopyTensorBytes(output, input);
  }
  absl::Status Broadcast(const Tensor& inout, int root) override {
    return CheckBroadcast(*this, inout, root);
  }
  absl::Status ReduceScatter(const Tensor& input, const Tensor& output, ReduceOp op) override {
    LS_RETURN_IF_ERROR(CheckReduceScatter(*this, input, output, op));
    return CopyTensorBytes(output, input);
  }
  absl::Status Barrier() override { return absl::OkStatus(); }

 private:
  Device device_;
};

}  // namespace

const char* ReduceOpName(ReduceOp op) {
  for (const auto& [value, name] : kReduceOps) {
    if (value == op) return name;
  }
  return "unknown";
}

absl::StatusOr<ReduceOp> ParseReduceOp(absl::string_view name) {
  for (const auto& [value, op_name] : kReduceOps) {
    if (name == op_name) return value;
  }
  std::vector<const char*> known;
  for (const auto& entry : kReduceOps) known.push_back(entry.second);
  return absl::InvalidArgumentError(
      absl::StrCat("unknown reduce op '", name, "'; known: ", absl::StrJoin(known, ", ")));
}

std::shared_ptr<Communicator> MakeSelfCommunicator(Device device) {
  return std::make_shared<SelfCommunicator>(device);
}

}  // namespace lockstep::parallel
