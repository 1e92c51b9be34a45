#pragma once

// What the layers above need of a device without naming its runtime: the stream its kernels run
// on, copies between any two devices and zero fills. On the CPU these are plain memory
// operations; on CUDA they run in order with the device's compute stream, and a copy into host
// memory waits for it.

#include <cstddef>

#include "core/device.h"
#include "core/status.h"

namespace lockstep {

// The stream kernels on `device` run on: nullptr on the CPU, the device's one compute stream
// (a cudaStream_t, created on first use) on CUDA.
void* ComputeStream(Device device);

// Blocks until everything queued on `device`'s compute stream is done (nothing on the CPU).
absl::Status SynchronizeDevice(Device device);

// Copies `bytes` from `src` on `src_device` to `dst` on `dst_device`. A copy that involves a
// CUDA device is queued on that device's compute stream, after the kernels queued before it,
// and returns once it is done.
absl::Status CopyBytes(void* dst, Device dst_device, const void* src, Device src_device,
                       size_t bytes);

// Sets `bytes` at `dst` on `device` to zero (on CUDA: queued on the compute stream).
absl::Status ZeroBytes(void* dst, Device device, size_t bytes);

}  // namespace lockstep

namespace lockstep {

// Times work where it runs, for profiling: on the CPU the host clock around the work, on CUDA
// events recorded on the compute stream (kernels run after their launch returns).
class DeviceTimer {
 public:
  explicit DeviceTimer(Device device);
  ~DeviceTimer();
  DeviceTimer(const DeviceTimer&) = delete;
  DeviceTimer& operator=(const DeviceTimer&) = delete;

  void Start();
  void Stop();
  // Between the last Start and Stop; on CUDA it waits for the Stop marker.
  absl::StatusOr<double> Seconds() const;

 private:
  Device device_;
  double start_ = 0.0, stop_ = 0.0;  // host clock, seconds (CPU)
  // cudaEvent_t (CUDA). Declared in every build, so that the class has one layout whichever
  // build includes it; a CPU-only build never touches them.
  [[maybe_unused]] void* start_event_ = nullptr;
  [[maybe_unused]] void* stop_event_ = nullptr;
};

}  // namespace lockstep
