#pragma once

// A kernel that holds its stream until the host lets it go, to stall a collective queued behind
// it as a stuck peer would.

#include <cuda_runtime.h>

namespace lockstep::parallel::test_kernels {

// Spins on the device until `*release` (host memory mapped into the device) becomes non-zero.
cudaError_t LaunchStall(const volatile int* release, cudaStream_t stream);

}  // namespace lockstep::parallel::test_kernels
