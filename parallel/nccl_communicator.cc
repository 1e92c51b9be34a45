#include "parallel/nccl_communicator.h"

#include <cstring>

#include "core/device_memory.h"
#include "ops/cuda/cuda_status.h"
#include "parallel/collective_util.h"

namespace lockstep::parallel {
namespace {

ncclDataType_t NcclType(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return ncclFloat32;
    case DType::kF16:
      return ncclFloat16;
    case DType::kBF16:
      return ncclBfloat16;
    case DType::kF64:
      return ncclFloat64;
    case DType::kI32:
      return ncclInt32;
    case DType::kI64:
      return ncclInt64;
    case DType::kU8:
    case DType::kBool:  // moved only, never reduced
      return ncclUint8;
  }
  LS_CHECK(false) << "unhandled dtype " << static_cast<int>(dtype);
  return ncclUint8;
}

ncclRedOp_t NcclOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kMin:
      return ncclMin;
    case ReduceOp::kAvg:
      return ncclAvg;
  }
  LS_CHECK(false) << "unhandled reduce op " << static_cast<int>(op);
  return ncclSum;
}

}  // namespace

absl::Status NcclErrorStatus(ncclResult_t result, const char* call, const char* file, int line) {
  std::string message = absl::StrCat("NCCL call ", call, " failed at ", file, ":", line, ": ",
                                     ncclGetErrorString(result));
  const char* detail = ncclGetLastError(nullptr);
  if (detail != nullptr && *detail != '\0') absl::StrAppend(&message, " (", detail, ")");
  return absl::InternalError(message);
}

absl::StatusOr<std::shared_ptr<NcclCommunicator>> NcclCommunicator::Create(Communicator& bootstrap,
                                                                           int device_index) {
  Tensor id = Tensor::Empty({static_cast<int64_t>(sizeof(ncclUniqueId))}, DType::kU8);
  if (bootstrap.rank() == 0) {
    NCCL_RETURN_IF_ERROR(ncclGetUniqueId(static_cast<ncclUniqueId*>(id.raw_data())));
  }
  LS_RETURN_IF_ERROR(Annotate(bootstrap.Broadcast(id, 0), "handing out the NCCL unique id"));
  ncclUniqueId unique_id;
  std::memcpy(&unique_id, id.raw_data(), sizeof(unique_id));

  std::shared_ptr<NcclCommunicator> comm(
      new NcclCommunicator(bootstrap.rank(), bootstrap.size(), Device::CUDA(device_index)));
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device_index));
  CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&comm->stream_, cudaStreamNonBlocking));
  CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&comm->ready_, cudaEventDisableTiming));
  NCCL_RETURN_IF_ERROR(ncclCommInitRank(&comm->comm_, comm->size_, unique_id, comm->rank_));
  comm->barrier_ = Tensor::Empty({1}, DType::kI32, comm->device_);
  CUDA_RETURN_IF_ERROR(cudaMemset(comm->barrier_.raw_data(), 0, comm->barrier_.nbytes()));
  return comm;
}

NcclCommunicator::~NcclCommunicator() {
  if (comm_ != nullptr) ncclCommDestroy(comm_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
  if (ready_ != nullptr) cudaEventDestroy(ready_);
}

absl::Status NcclCommunicator::EnqueueAllReduce(const std::vector<Tensor>& inouts, ReduceOp op,
                                                cudaStream_t after, cudaEvent_t done,
                                                const StreamWork& before,
                                                const StreamWork& after_reduce) {
  size_t bytes = 0;
  for (const Tensor& inout : inouts) {
    LS_RETURN_IF_ERROR(CheckAllReduce(*this, inout, op));
    bytes += inout.nbytes();
  }
  auto enqueue = [&]() -> absl::Status {
    CUDA_RETURN_IF_ERROR(cudaEventRecord(ready_, after));
    CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream_, ready_, 0));
    if (before) LS_RETURN_IF_ERROR(before(stream_));
    NCCL_RETURN_IF_ERROR(ncclGroupStart());
    for (const Tensor& inout : inouts) {
      NCCL_RETURN_IF_ERROR(ncclAllReduce(inout.raw_data(), inout.raw_data(), inout.numel(),
                                         NcclType(inout.dtype()), NcclOp(op), comm_, stream_));
    }
    NCCL_RETURN_IF_ERROR(ncclGroupEnd());
    if (after_reduce) LS_RETURN_IF_ERROR(after_reduce(stream_));
    CUDA_RETURN_IF_ERROR(cudaEventRecord(done, stream_));
    return absl::OkStatus();
  };
  return Annotate(enqueue(), DescribeCollective(*this, "AllReduce", bytes));
}

absl::Status NcclCommunicator::AllReduce(const Tensor& inout, ReduceOp op) {
  LS_RETURN_IF_ERROR(CheckAllReduce(*this, inout, op));
  return Run("AllReduce", inout.nbytes(), [&]() -> absl::Status {
    NCCL_RETURN_IF_ERROR(ncclAllReduce(inout.raw_data(), inout.raw_data(), inout.numel(),
                                       NcclType(inout.dtype()), NcclOp(op), comm_, stream_));
    return absl::OkStatus();
  });
}

absl::Status NcclCommunicator::AllGather(const Tensor& input, const Tensor& output) {
  LS_RETURN_IF_ERROR(CheckAllGather(*this, input, output));
  return Run("AllGather", output.nbytes(), [&]() -> absl::Status {
    NCCL_RETURN_IF_ERROR(ncclAllGather(input.raw_data(), output.raw_data(), input.numel(),
                                       NcclType(input.dtype()), comm_, stream_));
    return absl::OkStatus();
  });
}

absl::Status NcclCommunicator::Broadcast(const Tensor& inout, int root) {
  LS_RETURN_IF_ERROR(CheckBroadcast(*this, inout, root));
  return Run("Broadcast", inout.nbytes(), [&]() -> absl::Status {
    NCCL_RETURN_IF_ERROR(ncclBroadcast(inout.raw_data(), inout.raw_data(), inout.numel(),
                                       NcclType(inout.dtype()), root, comm_, stream_));
    return absl::OkStatus();
  });
}

absl::Status NcclCommunicator::ReduceScatter(const Tensor& input, const Tensor& output,
                                             ReduceOp op) {
  LS_RETURN_IF_ERROR(CheckReduceScatter(*this, input, output, op));
  return Run("ReduceScatter", input.nbytes(), [&]() -> absl::Status {
    NCCL_RETURN_IF_ERROR(ncclReduceScatter(input.raw_data(), output.raw_data(), output.numel(),
                                           NcclType(input.dtype()), NcclOp(op), comm_, stream_));
    return absl::OkStatus();
  });
}

absl::Status NcclCommunicator::Barrier() {
  // NCCL has no barrier; a one-element AllReduce that every rank waits for is one.
  return Run("Barrier", 0, [&]() -> absl::Status {
    NCCL_RETURN_IF_ERROR(ncclAllReduce(barrier_.raw_data(), barrier_.raw_data(), 1, ncclInt32,
                                       ncclSum, comm_, stream_));
    return absl::OkStatus();
  });
}

absl::Status NcclCommunicator::Run(absl::string_view collective, size_t bytes,
                                   const std::function<absl::Status()>& launch) {
  return Annotate(LaunchAndWait(launch), DescribeCollective(*this, collective, bytes));
}

absl::Status NcclCommunicator::LaunchAndWait(const std::function<absl::Status()>& launch) {
  // The calling thread (often a CollectiveQueue's) may not have this device current yet.
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device_.index));
  // Tensors may still be written by kernels queued on the compute stream.
  LS_ASSIGN_OR_RETURN(void* compute, ComputeStream(device_));
  CUDA_RETURN_IF_ERROR(cudaEventRecord(ready_, static_cast<cudaStream_t>(compute)));
  CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream_, ready_, 0));
  LS_RETURN_IF_ERROR(launch());
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  return absl::OkStatus();
}

}  // namespace lockstep::parallel
