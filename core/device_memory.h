#pragma once

// What the layers above need of a device, through its backend (core/backend.h): the stream its
// kernels run on, copies between any two devices and zero fills. On the CPU these are plain
// memory operations; on a device with a stream they run in order with its compute stream, and a
// copy into host memory waits for it.

#include <cstddef>

#include "core/device.h"
#include "core/status.h"

namespace lockstep {

// The stream kernels on `device` run on: nullptr on the CPU, the device's one compute stream
// (a cudaStream_t, created on first use) on CUDA.
absl::StatusOr<void*> ComputeStream(Device device);

// Copies `bytes` from `src` on `src_device` to `dst` on `dst_device`: host memory and one
// backend's memory, or within one backend. Returns once a copy into host memory is done.
absl::Status CopyBytes(void* dst, Device dst_device, const void* src, Device src_device,
                       size_t bytes);

// Sets `bytes` at `dst` on `device` to zero (on CUDA: queued on the compute stream).
absl::Status ZeroBytes(void* dst, Device device, size_t bytes);

}  // namespace lockstep
