#pragma once

#include <cstdint>
#include <string>

namespace lockstep {

// The device types this project's backends implement. A backend of another kind (a test's, a
// plug-in's) registers under an id of its own from kFirstOther up (core/backend.h).
enum class DeviceType : uint8_t { kCPU = 0, kCUDA = 1, kFirstOther = 16 };

struct Device {
  DeviceType type = DeviceType::kCPU;
  int index = 0;

  static Device CPU() { return {DeviceType::kCPU, 0}; }
  static Device CUDA(int index) { return {DeviceType::kCUDA, index}; }
  bool operator==(const Device&) const = default;
  std::string ToString() const;
};

}  // namespace lockstep
