// CUDA kernels of Identity, Reshape and Flatten: a device-to-device copy, as the CPU kernels,
// skipped where the memory plan shares the input's memory.

#include "graph/kernel.h"
#include "ops/cuda/copy_kernel.h"

namespace lockstep {
namespace {

using cuda::CopyKernel;

REGISTER_KERNEL({.op = "Identity",
                 .device = DeviceType::kCUDA,
                 .create = MakeFactory<CopyKernel>()});
REGISTER_KERNEL({.op = "Reshape",
                 .device = DeviceType::kCUDA,
                 .create = MakeFactory<CopyKernel>()});
REGISTER_KERNEL({.op = "Flatten",
                 .device = DeviceType::kCUDA,
                 .create = MakeFactory<CopyKernel>()});

}  // namespace
}  // namespace lockstep
