// The AllReduce kernel for device memory: the stream-ordered kernel (stream_all_reduce.h) over
// the group's NCCL communicator, with the wire conversions on the device (wire_convert.cu).

#include "graph/kernel.h"
#include "ops/cuda/cuda_status.h"
#include "parallel/ops/cuda/wire_convert.h"
#include "parallel/ops/stream_all_reduce.h"

namespace lockstep::parallel {
namespace {

// ConvertFn on the device.
absl::Status ConvertOnDevice(const Tensor& from, const Tensor& to, void* stream) {
  LS_CHECK(from.numel() == to.numel()) << from.numel() << " elements into " << to.numel();
  CUDA_RETURN_IF_ERROR(cuda::LaunchConvert(from.raw_data(), from.dtype(), to.raw_data(), to.dtype(),
                                           from.numel(), static_cast<cudaStream_t>(stream)));
  return absl::OkStatus();
}

REGISTER_KERNEL({.op = "AllReduce",
                 .device = DeviceType::kCUDA,
                 .dtype = DType::kF32,
                 .create = StreamAllReduceFactory(ConvertOnDevice)});
REGISTER_KERNEL({.op = "AllReduce",
                 .device = DeviceType::kCUDA,
                 .dtype = DType::kF64,
                 .create = StreamAllReduceFactory(ConvertOnDevice)});

}  // namespace
}  // namespace lockstep::parallel
