#pragma once

// LS_HOST_DEVICE marks the per-element math in ops/<family>_math.h, which the CPU loops and the
// CUDA kernels both call: __host__ __device__ under nvcc, nothing for the host compiler.

#ifdef __CUDACC__
#define LS_HOST_DEVICE __host__ __device__
#else
#define LS_HOST_DEVICE
#endif
