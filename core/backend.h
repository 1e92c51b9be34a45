#pragma once

// A device type's runtime, registered once by the folder that implements it (ops/cpu, ops/cuda,
// or a test's own backend): its memory, its compute stream, copies and fills, timers, the
// layouts its kernels may keep values in and the reorder between them. Tensor, the executor and
// the memory plan ask the backend of a value's device; core/ and graph/ name no device runtime
// and no library's layouts.
//
//   REGISTER_BACKEND(DeviceType::kCUDA, CudaBackend);   // in the backend's folder

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/layout.h"
#include "core/status.h"
#include "core/tensor.h"

namespace lockstep {

// A device's streams: kernels, and the copies and fills queued with them, run on the compute
// stream; the batch of the next step moves to the device on the copy stream meanwhile.
enum class Stream { kCompute, kCopy };

// A point in a stream's queued work that another stream, or the host, can wait for. Where work
// is done before the call that queues it returns (the host), every event has already happened.
class DeviceEvent {
 public:
  virtual ~DeviceEvent() = default;
};

// A step's device work recorded once, to be launched again as a whole (a CUDA graph).
class CapturedWork {
 public:
  virtual ~CapturedWork() = default;
};

// Times work where it runs: the host clock around it on the CPU, events on a device stream.
class DeviceTimer {
 public:
  virtual ~DeviceTimer() = default;
  virtual void Start() = 0;
  virtual void Stop() = 0;
  // Between the last Start and Stop (waits for the Stop marker on a device); a failure of the
  // device calls behind Start or Stop shows here.
  virtual absl::StatusOr<double> Seconds() const = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  // Lower-case, for device names in messages: "cpu", "cuda".
  virtual std::string name() const = 0;
  // Alignment of every allocation and of every offset the memory plan hands out.
  virtual size_t alignment() const = 0;

  // Makes device `index` current on the calling thread: the device the runtime's calls act on
  // where they name none (kernel launches, the library handles kernels are built on, frees of
  // page-locked memory, waits on events). Every thread starts with device 0 current, so a thread
  // that reaches a device's runtime without this acts on device 0: on CUDA, rank 1 of a host
  // would start a context on GPU 0 (memory there) and put its work on GPU 0's handles. So each
  // thread that touches device `index` calls this first (MakeDeviceCurrent below); the
  // components that act on a device (Executor, kernel building, InputFeed, HostBufferPool) do so
  // for whichever thread calls them. The default has nothing to make current.
  virtual absl::Status MakeCurrent(int index);

  // `bytes` on device `index`; a failure names the bytes and the device.
  virtual absl::StatusOr<void*> Allocate(size_t bytes, int index) = 0;
  virtual void Free(void* ptr, int index) = 0;
  // The stream kernels on device `index` run on (a cudaStream_t on CUDA); nullptr where work runs
  // on the calling thread.
  virtual absl::StatusOr<void*> ComputeStream(int index) = 0;
  // Copies `bytes` between this backend's memory and host memory, or within this backend's
  // memory; a copy into host memory has finished when it returns. The host backend's copies are
  // host-to-host.
  virtual absl::Status Copy(void* dst, Device dst_device, const void* src, Device src_device,
                            size_t bytes) = 0;
  // Sets `bytes` at `dst` to zero (queued on the compute stream where there is one).
  virtual absl::Status Zero(void* dst, int index, size_t bytes) = 0;
  virtual std::unique_ptr<DeviceTimer> CreateTimer(int index) = 0;

  // Host memory that copies to and from device `index` can use without the host waiting:
  // page-locked on CUDA. Allocating it may be slow and may wait for the device, so callers
  // recycle it (core/host_buffer_pool.h). The default is plain host memory.
  virtual absl::StatusOr<void*> AllocateHost(size_t bytes, int index);
  virtual void FreeHost(void* ptr, int index);
  // Copy queues the copy on `stream` and may return before it is done: both sides must stay as
  // they are until an event recorded after it has happened. The default copies at once.
  virtual absl::Status CopyAsync(void* dst, Device dst_device, const void* src, Device src_device,
                                 size_t bytes, Stream stream);
  // Events of device `index`. By default they are plain objects and waiting returns at once,
  // since the default copies have finished when they return.
  virtual absl::StatusOr<std::unique_ptr<DeviceEvent>> CreateEvent(int index);
  // Marks the work queued on `stream` so far.
  virtual absl::Status Record(DeviceEvent& event, int index, Stream stream);
  // Work queued on `stream` from now on starts after `event`; the host goes on at once.
  virtual absl::Status StreamWait(int index, Stream stream, DeviceEvent& event);
  // The host waits until `event` has happened.
  virtual absl::Status HostWait(DeviceEvent& event);

  // Recording, for steps launched as one piece of work (Executor::ReplayAfter). After
  // BeginCapture, what the calling thread queues on device `index`'s compute stream is recorded
  // instead of run; EndCapture returns the recording ready to launch, or why it cannot be one.
  // Nothing recorded has run either way. The default cannot record.
  virtual absl::Status BeginCapture(int index);
  virtual absl::StatusOr<std::unique_ptr<CapturedWork>> EndCapture(int index);
  // Queues a recording on device `index`'s compute stream.
  virtual absl::Status Launch(CapturedWork& work, int index);

  // Copies `from` into `to` (same shape and dtype, either device of this backend or the host)
  // from one layout into another. Between equal layouts it is a copy; the default reorders
  // nothing else.
  virtual absl::Status Reorder(const Tensor& from, Layout from_layout, const Tensor& to,
                               Layout to_layout);
  // The op AssignLayouts inserts where a producer and a reader want different layouts (empty
  // when this backend's kernels all want plain).
  virtual std::string reorder_op() const { return ""; }
  // Layouts that values every rank must hold alike (parameters, their gradients and optimizer
  // state) may take, by preference. A job uses those of them every rank offers; with none in
  // common such values stay plain. See parallel/shared_layouts.h, SharedLayouts in
  // graph/kernel.h.
  virtual std::vector<Layout> SharedLayoutOffer() const { return {}; }
  // Writes `images`, uint8 (N, H, W, C) in this backend's memory, into `to`, float32
  // (N, C, H, W) of the same device, normalized per channel as the dataset's Normalize and
  // HWC2CHW would (ops/image_input_math.h), queued on the compute stream where there is one: a
  // batch then crosses to the device as a quarter of the bytes, and the host does no float work.
  // The default has none. CheckNormalizeImages below says what the arguments must be.
  virtual absl::Status NormalizeImages(const Tensor& images, const Tensor& to,
                                       const std::vector<float>& mean,
                                       const std::vector<float>& std);
  // Whether this device's hardware computes in `dtype` (low precision gains speed only where it
  // does). Float32, float64 and the integers everywhere; bf16 and f16 where a backend says so.
  virtual bool ComputesNatively(DType dtype) const { return !IsLowPrecision(dtype); }
};

// The arguments of Backend::NormalizeImages: shapes that match, 1 to 4 channels, one mean and
// one nonzero std per channel.
absl::Status CheckNormalizeImages(const Tensor& images, const Tensor& to,
                                  const std::vector<float>& mean, const std::vector<float>& std);

// Backend::MakeCurrent of `device` for the calling thread; nothing to do on the CPU.
absl::Status MakeDeviceCurrent(Device device);

// Registers `backend` for `type`; a type has at most one backend.
bool RegisterBackend(DeviceType type, std::unique_ptr<Backend> backend);
// The backend of `type`. The CPU always has one: without a registered CPU backend (programs that
// link only core/), a host backend with plain layouts only.
absl::StatusOr<Backend*> FindBackend(DeviceType type);
// FindBackend for devices that must have a backend by the time they are used (a tensor's own).
Backend& BackendOf(Device device);
// The name of the type's backend ("cpu", "cuda", a test's), or its id when it has none.
std::string DeviceTypeName(DeviceType type);

}  // namespace lockstep

#define REGISTER_BACKEND(type, BackendClass)                                    \
  [[maybe_unused]] static const bool LS_BACKEND_CONCAT(ls_backend_, __LINE__) = \
      ::lockstep::RegisterBackend(type, std::make_unique<BackendClass>())
#define LS_BACKEND_CONCAT_INNER(a, b) a##b
#define LS_BACKEND_CONCAT(a, b) LS_BACKEND_CONCAT_INNER(a, b)
