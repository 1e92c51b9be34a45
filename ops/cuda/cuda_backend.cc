// The CUDA backend: memory from the caching allocator, page-locked host memory, a non-blocking
// compute stream and copy stream per device, copies and fills queued on them, events and event
// timers, and CUDA graphs captured from the compute stream. Besides plain it has the NHWC layout of
// 16-bit activations and convolution weights (cuda_layouts.h), reordered by the "Reorder" op
// between kernels and on the host for the executor's plain copies.

#include <map>
#include <memory>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "core/backend.h"
#include "ops/cuda/cuda_allocator.h"
#include "ops/cuda/cuda_layouts.h"
#include "ops/cuda/cuda_status.h"
#include "ops/cuda/image_input_kernels.h"

namespace lockstep::cuda {
namespace {

// 256 bytes: what cuBLASLt and cuDNN want of their operands for the fastest algorithms.
constexpr size_t kCudaAlignment = 256;

// The handles below are destroyed on whichever thread drops them last, perhaps one that never
// made their device current: each destructor makes it current first, or the runtime would start
// a context on device 0 to destroy them in.
class EventTimer : public DeviceTimer {
 public:
  EventTimer(int device, absl::StatusOr<cudaStream_t> stream) : device_(device) {
    status_ = stream.status();
    if (stream.ok()) {
      stream_ = *stream;
      status_ = Create(device);
    }
  }
  ~EventTimer() override {
    if (start_ != nullptr || stop_ != nullptr) cudaSetDevice(device_);
    if (start_ != nullptr) cudaEventDestroy(start_);
    if (stop_ != nullptr) cudaEventDestroy(stop_);
  }
  void Start() override { Record(start_); }
  void Stop() override { Record(stop_); }
  absl::StatusOr<double> Seconds() const override {
    LS_RETURN_IF_ERROR(status_);
    CUDA_RETURN_IF_ERROR(cudaEventSynchronize(stop_));
    float ms = 0.0f;
    CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start_, stop_));
    return ms / 1e3;
  }

 private:
  absl::Status Create(int device) {
    CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
    CUDA_RETURN_IF_ERROR(cudaEventCreate(&start_));
    CUDA_RETURN_IF_ERROR(cudaEventCreate(&stop_));
    return absl::OkStatus();
  }
  // The first failure is kept for Seconds to report.
  void Record(cudaEvent_t event) {
    if (status_.ok()) status_ = RecordOn(event);
  }
  absl::Status RecordOn(cudaEvent_t event) {
    CUDA_RETURN_IF_ERROR(cudaEventRecord(event, stream_));
    return absl::OkStatus();
  }

  int device_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  absl::Status status_;
};

class CudaEvent : public DeviceEvent {
 public:
  explicit CudaEvent(int device) : device(device) {}
  ~CudaEvent() override {
    if (event == nullptr) return;
    cudaSetDevice(device);
    cudaEventDestroy(event);
  }
  const int device;
  cudaEvent_t event = nullptr;
};

cudaEvent_t EventOf(DeviceEvent& event) { return static_cast<CudaEvent&>(event).event; }

class CudaGraph : public CapturedWork {
 public:
  explicit CudaGraph(int device) : device(device) {}
  ~CudaGraph() override {
    if (exec != nullptr || graph != nullptr) cudaSetDevice(device);
    if (exec != nullptr) cudaGraphExecDestroy(exec);
    if (graph != nullptr) cudaGraphDestroy(graph);
  }
  const int device;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
};

class CudaBackend : public Backend {
 public:
  std::string name() const override { return "cuda"; }
  size_t alignment() const override { return kCudaAlignment; }

  absl::Status MakeCurrent(int index) override {
    CUDA_RETURN_IF_ERROR(cudaSetDevice(index));
    return absl::OkStatus();
  }

  absl::StatusOr<void*> Allocate(size_t bytes, int index) override {
    return CudaAllocate(bytes, index);
  }
  void Free(void* ptr, int index) override { CudaFree(ptr, index); }

  absl::StatusOr<void*> ComputeStream(int index) override {
    LS_ASSIGN_OR_RETURN(cudaStream_t stream, Stream(index));
    return stream;
  }

  absl::Status Copy(void* dst, Device dst_device, const void* src, Device src_device,
                    size_t bytes) override {
    const int index = dst_device.type == DeviceType::kCUDA ? dst_device.index : src_device.index;
    LS_RETURN_IF_ERROR(
        CopyAsync(dst, dst_device, src, src_device, bytes, lockstep::Stream::kCompute));
    LS_ASSIGN_OR_RETURN(cudaStream_t stream, Stream(index));
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
    return absl::OkStatus();
  }

  absl::StatusOr<void*> AllocateHost(size_t bytes, int index) override {
    CUDA_RETURN_IF_ERROR(cudaSetDevice(index));
    void* data = nullptr;
    // Portable: page-locked for every device of the process, whichever is current.
    CUDA_RETURN_IF_ERROR(cudaHostAlloc(&data, bytes, cudaHostAllocPortable));
    return data;
  }
  // A free may come from a destructor on any thread (HostBufferPool's): it makes the device
  // current itself rather than start a context on device 0 for cudaFreeHost.
  void FreeHost(void* ptr, int index) override {
    cudaSetDevice(index);
    cudaFreeHost(ptr);
  }

  absl::Status CopyAsync(void* dst, Device dst_device, const void* src, Device src_device,
                         size_t bytes, lockstep::Stream on) override {
    const int index = dst_device.type == DeviceType::kCUDA ? dst_device.index : src_device.index;
    LS_ASSIGN_OR_RETURN(cudaStream_t stream, Stream(index, on));
    CUDA_RETURN_IF_ERROR(cudaSetDevice(index));
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream));
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<DeviceEvent>> CreateEvent(int index) override {
    CUDA_RETURN_IF_ERROR(cudaSetDevice(index));
    auto event = std::make_unique<CudaEvent>(index);
    CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&event->event, cudaEventDisableTiming));
    return event;
  }
  absl::Status Record(DeviceEvent& event, int index, lockstep::Stream on) override {
    LS_ASSIGN_OR_RETURN(cudaStream_t stream, Stream(index, on));
    CUDA_RETURN_IF_ERROR(cudaEventRecord(EventOf(event), stream));
    return absl::OkStatus();
  }
  absl::Status StreamWait(int index, lockstep::Stream on, DeviceEvent& event) override {
    LS_ASSIGN_OR_RETURN(cudaStream_t stream, Stream(index, on));
    CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream, EventOf(event), 0));
    return absl::OkStatus();
  }
  absl::Status HostWait(DeviceEvent& event) override {
    CUDA_RETURN_IF_ERROR(cudaEventSynchronize(EventOf(event)));
    return absl::OkStatus();
  }

  // Thread-local capture: the pipeline's and the collective watch's threads go on using CUDA
  // while the executor's thread records.
  absl::Status BeginCapture(int index) override {
    LS_ASSIGN_OR_RETURN(cudaStream_t stream, Stream(index));
    CUDA_RETURN_IF_ERROR(cudaSetDevice(index));
    CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    return absl::OkStatus();
  }
  absl::StatusOr<std::unique_ptr<CapturedWork>> EndCapture(int index) override {
    LS_ASSIGN_OR_RETURN(cudaStream_t stream, Stream(index));
    auto work = std::make_unique<CudaGraph>(index);
    // Ends the capture even where a call inside it failed and invalidated it; that call's error
    // is not left behind for the next launch's check.
    const cudaError_t ended = cudaStreamEndCapture(stream, &work->graph);
    cudaGetLastError();
    CUDA_RETURN_IF_ERROR(ended);
    CUDA_RETURN_IF_ERROR(cudaGraphInstantiate(&work->exec, work->graph, 0));
    return work;
  }
  absl::Status Launch(CapturedWork& work, int index) override {
    LS_ASSIGN_OR_RETURN(cudaStream_t stream, Stream(index));
    CUDA_RETURN_IF_ERROR(cudaSetDevice(index));
    CUDA_RETURN_IF_ERROR(cudaGraphLaunch(static_cast<CudaGraph&>(work).exec, stream));
    return absl::OkStatus();
  }

  absl::Status Zero(void* dst, int index, size_t bytes) override {
    LS_ASSIGN_OR_RETURN(cudaStream_t stream, Stream(index));
    CUDA_RETURN_IF_ERROR(cudaSetDevice(index));
    CUDA_RETURN_IF_ERROR(cudaMemsetAsync(dst, 0, bytes, stream));
    return absl::OkStatus();
  }

  absl::Status NormalizeImages(const Tensor& images, const Tensor& to,
                               const std::vector<float>& mean,
                               const std::vector<float>& std) override {
    LS_RETURN_IF_ERROR(CheckNormalizeImages(images, to, mean, std));
    if (images.device() != to.device() || to.device().type != DeviceType::kCUDA) {
      return absl::InvalidArgumentError(
          absl::StrCat("images to normalize on ", to.device().ToString(), " are on ",
                       images.device().ToString(), ": copy them there first"));
    }
    const int index = to.device().index;
    LS_ASSIGN_OR_RETURN(cudaStream_t stream, Stream(index));
    CUDA_RETURN_IF_ERROR(cudaSetDevice(index));
    const math::ImageNormalization n =
        math::MakeImageNormalization(mean.data(), std.data(), static_cast<int>(images.dim(3)));
    CUDA_RETURN_IF_ERROR(LaunchNormalizeImages(images.data<uint8_t>(), to.data<float>(), to.numel(),
                                               images.dim(1) * images.dim(2), n, stream));
    return absl::OkStatus();
  }

  std::unique_ptr<DeviceTimer> CreateTimer(int index) override {
    return std::make_unique<EventTimer>(index, Stream(index));
  }

  // Reads and writes of values kept in NHWC (the executor's plain copies, checkpoints): through
  // host memory, where the permutation runs, since one side is the host anyway.
  absl::Status Reorder(const Tensor& from, Layout from_layout, const Tensor& to,
                       Layout to_layout) override {
    if (from_layout == to_layout) return Backend::Reorder(from, from_layout, to, to_layout);
    const Layout nhwc = NhwcLayout();
    const bool to_nhwc = from_layout == Layout::kPlain && to_layout == nhwc;
    if (!to_nhwc && !(from_layout == nhwc && to_layout == Layout::kPlain)) {
      return Backend::Reorder(from, from_layout, to, to_layout);
    }
    if (from.shape() != to.shape() || from.dtype() != to.dtype() || from.shape().size() != 4) {
      return absl::InvalidArgumentError(absl::StrCat("reorder of ", ShapeToString(from.shape()),
                                                     " into ", ShapeToString(to.shape())));
    }
    LS_ASSIGN_OR_RETURN(Tensor staged, Tensor::Allocate(from.shape(), from.dtype(), Device::CPU(),
                                                        /*zeroed=*/false));
    LS_ASSIGN_OR_RETURN(Tensor permuted, Tensor::Allocate(from.shape(), from.dtype(), Device::CPU(),
                                                          /*zeroed=*/false));
    LS_RETURN_IF_ERROR(
        Copy(staged.raw_data(), Device::CPU(), from.raw_data(), from.device(), from.nbytes()));
    const size_t bytes = SizeOf(from.dtype());
    if (to_nhwc) {
      PermuteToNhwc(staged.raw_data(), permuted.raw_data(), from.shape(), bytes);
    } else {
      PermuteFromNhwc(staged.raw_data(), permuted.raw_data(), from.shape(), bytes);
    }
    return Copy(to.raw_data(), to.device(), permuted.raw_data(), Device::CPU(), to.nbytes());
  }

  std::string reorder_op() const override { return "Reorder"; }
  std::vector<Layout> SharedLayoutOffer() const override { return {NhwcLayout()}; }
  // Tensor cores take f16 from Volta (compute capability 7.0) and bf16 from Ampere (8.0).
  bool ComputesNatively(DType dtype) const override {
    if (!IsLowPrecision(dtype)) return true;
    static const int major = [] {
      int value = 0;
      return cudaDeviceGetAttribute(&value, cudaDevAttrComputeCapabilityMajor, 0) == cudaSuccess
                 ? value
                 : 0;
    }();
    return major >= (dtype == DType::kBF16 ? 8 : 7);
  }

 private:
  absl::StatusOr<cudaStream_t> Stream(int device,
                                      lockstep::Stream on = lockstep::Stream::kCompute) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = streams_.find({device, on});
    if (it != streams_.end()) return it->second;
    CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
    cudaStream_t stream = nullptr;
    CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    streams_[{device, on}] = stream;
    return stream;
  }

  std::mutex mutex_;
  // By device and kind; created on first use, kept for the process.
  std::map<std::pair<int, lockstep::Stream>, cudaStream_t> streams_;
};

REGISTER_BACKEND(DeviceType::kCUDA, CudaBackend);

}  // namespace
}  // namespace lockstep::cuda
