// CUDA kernels of Identity, Reshape and Flatten: a device-to-device copy, as the CPU kernels,
// skipped where the memory plan shares the input's memory. The bytes are copied whatever the
// dtype, so every float dtype has them (a 16-bit network flattens 16-bit features). Identity
// keeps its input's layout; Reshape and Flatten want plain input, since they reinterpret the
// (N, C, H, W) order.

#include "graph/kernel.h"
#include "ops/cuda/copy_kernel.h"

namespace lockstep {
namespace {

[[maybe_unused]] const bool kRegistered[] = {
    RegisterFloatKernels({.op = "Identity",
                          .device = DeviceType::kCUDA,
                          .create = MakeFactory<cuda::CopyKernel>(),
                          .layouts = SameLayoutAsFirstInput}),
    RegisterFloatKernels(
        {.op = "Reshape", .device = DeviceType::kCUDA, .create = MakeFactory<cuda::CopyKernel>()}),
    RegisterFloatKernels(
        {.op = "Flatten", .device = DeviceType::kCUDA, .create = MakeFactory<cuda::CopyKernel>()}),
};

}  // namespace
}  // namespace lockstep
