#include "core/device_memory.h"

#include <chrono>
#include <cstring>
#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "core/logging.h"

#ifdef LOCKSTEP_WITH_CUDA
#include "core/cuda_util.h"
#endif

namespace lockstep {
namespace {

#ifdef LOCKSTEP_WITH_CUDA
absl::StatusOr<cudaStream_t> CudaStream(int device) {
  static std::mutex mutex;
  static auto* streams = new std::map<int, cudaStream_t>();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = streams->find(device);
  if (it != streams->end()) return it->second;
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  cudaStream_t stream = nullptr;
  CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  (*streams)[device] = stream;
  return stream;
}
#endif

#ifndef LOCKSTEP_WITH_CUDA
absl::Status NoCuda(Device device) {
  return absl::FailedPreconditionError(
      absl::StrCat("this build has no CUDA support; cannot use ", device.ToString()));
}
#endif

}  // namespace

void* ComputeStream(Device device) {
  if (device.type == DeviceType::kCPU) return nullptr;
#ifdef LOCKSTEP_WITH_CUDA
  absl::StatusOr<cudaStream_t> stream = CudaStream(device.index);
  LS_CHECK(stream.ok()) << "creating the compute stream of " << device.ToString() << ": "
                        << stream.status();
  return *stream;
#else
  LS_CHECK(false) << NoCuda(device);
  return nullptr;
#endif
}

absl::Status SynchronizeDevice(Device device) {
  if (device.type == DeviceType::kCPU) return absl::OkStatus();
#ifdef LOCKSTEP_WITH_CUDA
  LS_ASSIGN_OR_RETURN(cudaStream_t stream, CudaStream(device.index));
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  return absl::OkStatus();
#else
  return NoCuda(device);
#endif
}

absl::Status CopyBytes(void* dst, Device dst_device, const void* src, Device src_device,
                       size_t bytes) {
  if (dst_device.type == DeviceType::kCPU && src_device.type == DeviceType::kCPU) {
    if (bytes > 0) std::memcpy(dst, src, bytes);
    return absl::OkStatus();
  }
#ifdef LOCKSTEP_WITH_CUDA
  const Device on = dst_device.type == DeviceType::kCUDA ? dst_device : src_device;
  LS_ASSIGN_OR_RETURN(cudaStream_t stream, CudaStream(on.index));
  CUDA_RETURN_IF_ERROR(cudaSetDevice(on.index));
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream));
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  return absl::OkStatus();
#else
  return NoCuda(dst_device.type == DeviceType::kCPU ? src_device : dst_device);
#endif
}

absl::Status ZeroBytes(void* dst, Device device, size_t bytes) {
  if (device.type == DeviceType::kCPU) {
    if (bytes > 0) std::memset(dst, 0, bytes);
    return absl::OkStatus();
  }
#ifdef LOCKSTEP_WITH_CUDA
  LS_ASSIGN_OR_RETURN(cudaStream_t stream, CudaStream(device.index));
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device.index));
  CUDA_RETURN_IF_ERROR(cudaMemsetAsync(dst, 0, bytes, stream));
  return absl::OkStatus();
#else
  return NoCuda(device);
#endif
}

namespace {

double HostSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

DeviceTimer::DeviceTimer(Device device) : device_(device) {
#ifdef LOCKSTEP_WITH_CUDA
  if (device_.type != DeviceType::kCUDA) return;
  cudaEvent_t start = nullptr, stop = nullptr;
  LS_CHECK(cudaEventCreate(&start) == cudaSuccess && cudaEventCreate(&stop) == cudaSuccess)
      << "creating timing events on " << device_.ToString();
  start_event_ = start;
  stop_event_ = stop;
#endif
}

DeviceTimer::~DeviceTimer() {
#ifdef LOCKSTEP_WITH_CUDA
  if (start_event_ != nullptr) cudaEventDestroy(static_cast<cudaEvent_t>(start_event_));
  if (stop_event_ != nullptr) cudaEventDestroy(static_cast<cudaEvent_t>(stop_event_));
#endif
}

void DeviceTimer::Start() {
  if (device_.type == DeviceType::kCPU) {
    start_ = HostSeconds();
    return;
  }
#ifdef LOCKSTEP_WITH_CUDA
  cudaEventRecord(static_cast<cudaEvent_t>(start_event_),
                  static_cast<cudaStream_t>(ComputeStream(device_)));
#endif
}

void DeviceTimer::Stop() {
  if (device_.type == DeviceType::kCPU) {
    stop_ = HostSeconds();
    return;
  }
#ifdef LOCKSTEP_WITH_CUDA
  cudaEventRecord(static_cast<cudaEvent_t>(stop_event_),
                  static_cast<cudaStream_t>(ComputeStream(device_)));
#endif
}

absl::StatusOr<double> DeviceTimer::Seconds() const {
  if (device_.type == DeviceType::kCPU) return stop_ - start_;
#ifdef LOCKSTEP_WITH_CUDA
  CUDA_RETURN_IF_ERROR(cudaEventSynchronize(static_cast<cudaEvent_t>(stop_event_)));
  float ms = 0.0f;
  CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start_event_),
                                            static_cast<cudaEvent_t>(stop_event_)));
  return ms / 1e3;
#else
  return NoCuda(device_);
#endif
}

}  // namespace lockstep
