// CUDA kernels of Identity, Reshape and Flatten: a device-to-device copy, as the CPU kernels,
// skipped where the memory plan shares the input's memory. The bytes are copied whatever the
// dtype, so every float dtype has them (a 16-bit network flattens 16-bit features). Identity
// keeps its input's layout; Reshape and Flatten want plain input, since they reinterpret the
// (N, C, H, W) order.

#include "graph/kernel.h"
#include "ops/cuda/copy_kernel.h"
#include "ops/cuda/element_types.h"

namespace lockstep {
namespace {

[[maybe_unused]] const bool kRegistered = [] {
  for (DType dtype : cuda::kFloatDTypes) {
    KernelRegistry& registry = KernelRegistry::Global();
    registry.Register({.op = "Identity",
                       .device = DeviceType::kCUDA,
                       .dtype = dtype,
                       .create = MakeFactory<cuda::CopyKernel>(),
                       .layouts = SameLayoutAsFirstInput});
    registry.Register({.op = "Reshape",
                       .device = DeviceType::kCUDA,
                       .dtype = dtype,
                       .create = MakeFactory<cuda::CopyKernel>()});
    registry.Register({.op = "Flatten",
                       .device = DeviceType::kCUDA,
                       .dtype = dtype,
                       .create = MakeFactory<cuda::CopyKernel>()});
  }
  return true;
}();

}  // namespace
}  // namespace lockstep
