#include "tests/parallel/cuda/stall_kernel.h"

namespace lockstep::parallel::test_kernels {
namespace {

__global__ void Stall(const volatile int* release) {
  while (*release == 0) __nanosleep(1000);
}

}  // namespace

cudaError_t LaunchStall(const volatile int* release, cudaStream_t stream) {
  Stall<<<1, 1, 0, stream>>>(release);
  return cudaGetLastError();
}

}  // namespace lockstep::parallel::test_kernels
