#include "parallel/collective_util.h"

#include "core/device_memory.h"

namespace lockstep::parallel {
namespace {

absl::Status CheckTensor(const Communicator& comm, absl::string_view collective,
                         absl::string_view role, const Tensor& tensor) {
  if (!tensor.defined()) {
    return absl::InvalidArgumentError(absl::StrCat(collective, ": ", role, " is undefined"));
  }
  if (tensor.device() != comm.device()) {
    return absl::InvalidArgumentError(
        absl::StrCat(collective, ": ", role, " is on ", tensor.device().ToString(), " but the ",
                     comm.backend(), " communicator moves ", comm.device().ToString(), " memory"));
  }
  return absl::OkStatus();
}

absl::Status CheckReducible(absl::string_view collective, DType dtype, ReduceOp op) {
  std::string what = absl::StrCat(collective, " ", ReduceOpName(op));
  if (dtype == DType::kBool) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": bool tensors cannot be reduced"));
  }
  if (op == ReduceOp::kAvg && !IsFloat(dtype) && dtype != DType::kF64) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " needs a floating-point tensor, got ", DTypeName(dtype)));
  }
  return absl::OkStatus();
}

// `whole` must be size() blocks of `block`'s bytes, of the same dtype.
absl::Status CheckBlocks(const Communicator& comm, absl::string_view collective,
                         absl::string_view whole_role, const Tensor& whole,
                         absl::string_view block_role, const Tensor& block) {
  LS_RETURN_IF_ERROR(CheckTensor(comm, collective, whole_role, whole));
  LS_RETURN_IF_ERROR(CheckTensor(comm, collective, block_role, block));
  if (whole.dtype() != block.dtype()) {
    return absl::InvalidArgumentError(absl::StrCat(collective, ": ", whole_role, " is ",
                                                   DTypeName(whole.dtype()), " but ", block_role,
                                                   " is ", DTypeName(block.dtype())));
  }
  size_t expected = static_cast<size_t>(comm.size()) * block.nbytes();
  if (whole.nbytes() != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat(collective, ": ", whole_role, " ", ShapeToString(whole.shape()), " holds ",
                     whole.nbytes(), " bytes but must hold size() x ", block_role, " = ",
                     comm.size(), " x ", block.nbytes(), " = ", expected, " bytes"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckAllReduce(const Communicator& comm, const Tensor& inout, ReduceOp op) {
  LS_RETURN_IF_ERROR(CheckTensor(comm, "AllReduce", "tensor", inout));
  return CheckReducible("AllReduce", inout.dtype(), op);
}

absl::Status CheckAllGather(const Communicator& comm, const Tensor& input, const Tensor& output) {
  return CheckBlocks(comm, "AllGather", "output", output, "input", input);
}

absl::Status CheckBroadcast(const Communicator& comm, const Tensor& inout, int root) {
  LS_RETURN_IF_ERROR(CheckTensor(comm, "Broadcast", "tensor", inout));
  if (root < 0 || root >= comm.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Broadcast: root ", root, " is not a rank of this world of ", comm.size()));
  }
  return absl::OkStatus();
}

absl::Status CheckReduceScatter(const Communicator& comm, const Tensor& input, const Tensor& output,
                                ReduceOp op) {
  LS_RETURN_IF_ERROR(CheckBlocks(comm, "ReduceScatter", "input", input, "output", output));
  return CheckReducible("ReduceScatter", input.dtype(), op);
}

std::string DescribeCollective(const Communicator& comm, absl::string_view collective,
                               size_t bytes) {
  return absl::StrCat(collective, " of ", bytes, " bytes on rank ", comm.rank(), " of ",
                      comm.size(), " (", comm.backend(), ")");
}

absl::Status CopyTensorBytes(const Tensor& dst, const Tensor& src) {
  LS_CHECK(dst.nbytes() == src.nbytes())
      << "copy of " << src.nbytes() << " bytes into " << dst.nbytes();
  if (dst.raw_data() == src.raw_data() || src.nbytes() == 0) return absl::OkStatus();
  return CopyBytes(dst.raw_data(), dst.device(), src.raw_data(), src.device(), src.nbytes());
}

}  // namespace lockstep::parallel
