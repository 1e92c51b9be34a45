#pragma once

// LS_HOST_DEVICE marks the per-element math that CUDA kernels run and CPU tests check against
// the CPU kernels: __host__ __device__ under nvcc, nothing for the host compiler.

#ifdef __CUDACC__
#define LS_HOST_DEVICE __host__ __device__
#else
#define LS_HOST_DEVICE
#endif
