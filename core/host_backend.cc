#include "core/host_backend.h"

#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/allocator.h"

namespace lockstep {
namespace {

double HostSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

class HostTimer : public DeviceTimer {
 public:
  void Start() override { start_ = HostSeconds(); }
  void Stop() override { stop_ = HostSeconds(); }
  absl::StatusOr<double> Seconds() const override { return stop_ - start_; }

 private:
  double start_ = 0.0, stop_ = 0.0;
};

}  // namespace

size_t HostBackend::alignment() const { return kCpuAlignment; }

// The host's own memory is what the other backends lend as host memory.
absl::StatusOr<void*> HostBackend::Allocate(size_t bytes, int index) {
  return Backend::AllocateHost(bytes, index);
}

void HostBackend::Free(void* ptr, int index) { Backend::FreeHost(ptr, index); }

absl::Status HostBackend::Copy(void* dst, Device, const void* src, Device, size_t bytes) {
  if (bytes > 0) std::memcpy(dst, src, bytes);
  return absl::OkStatus();
}

absl::Status HostBackend::Zero(void* dst, int, size_t bytes) {
  if (bytes > 0) std::memset(dst, 0, bytes);
  return absl::OkStatus();
}

std::unique_ptr<DeviceTimer> HostBackend::CreateTimer(int) { return std::make_unique<HostTimer>(); }

}  // namespace lockstep
