#pragma once

// Host memory as a backend: 64-byte aligned allocations (core/allocator.h), plain copies and
// fills, the host clock. The CPU backend (ops/cpu) builds on it; programs that link only core/
// get it as the CPU's backend.

#include "core/backend.h"

namespace lockstep {

class HostBackend : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  size_t alignment() const override;
  absl::StatusOr<void*> Allocate(size_t bytes, int index) override;
  void Free(void* ptr, int index) override;
  absl::StatusOr<void*> ComputeStream(int) override { return nullptr; }
  absl::Status Copy(void* dst, Device dst_device, const void* src, Device src_device,
                    size_t bytes) override;
  absl::Status Zero(void* dst, int index, size_t bytes) override;
  std::unique_ptr<DeviceTimer> CreateTimer(int index) override;
};

}  // namespace lockstep
