#include "core/device.h"

#include "core/backend.h"

namespace lockstep {

std::string Device::ToString() const {
  if (type == DeviceType::kCPU) return "cpu";
  return DeviceTypeName(type) + ":" + std::to_string(index);
}

}  // namespace lockstep
