#pragma once

#include <string>

namespace lockstep {

enum class DeviceType { kCPU, kCUDA };

struct Device {
  DeviceType type = DeviceType::kCPU;
  int index = 0;

  static Device CPU() { return {DeviceType::kCPU, 0}; }
  static Device CUDA(int index) { return {DeviceType::kCUDA, index}; }
  bool operator==(const Device&) const = default;
  std::string ToString() const;
};

}  // namespace lockstep
