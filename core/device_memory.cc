#include "core/device_memory.h"

#include "absl/strings/str_cat.h"
#include "core/backend.h"

namespace lockstep {

absl::StatusOr<void*> ComputeStream(Device device) {
  LS_ASSIGN_OR_RETURN(Backend * backend, FindBackend(device.type));
  return backend->ComputeStream(device.index);
}

absl::Status CopyBytes(void* dst, Device dst_device, const void* src, Device src_device,
                       size_t bytes) {
  // The backend of the device that is not the host moves the bytes.
  const Device on = dst_device.type == DeviceType::kCPU ? src_device : dst_device;
  const Device other = on == dst_device ? src_device : dst_device;
  if (other.type != DeviceType::kCPU && other.type != on.type) {
    return absl::UnimplementedError(absl::StrCat("no copy from ", src_device.ToString(), " to ",
                                                 dst_device.ToString(),
                                                 " except through the host"));
  }
  LS_ASSIGN_OR_RETURN(Backend * backend, FindBackend(on.type));
  return backend->Copy(dst, dst_device, src, src_device, bytes);
}

absl::Status ZeroBytes(void* dst, Device device, size_t bytes) {
  LS_ASSIGN_OR_RETURN(Backend * backend, FindBackend(device.type));
  return backend->Zero(dst, device.index, bytes);
}

}  // namespace lockstep
