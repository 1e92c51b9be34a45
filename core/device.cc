#include "core/device.h"

namespace lockstep {

std::string Device::ToString() const {
  return type == DeviceType::kCPU ? std::string("cpu") : "cuda:" + std::to_string(index);
}

}  // namespace lockstep
