#pragma once

// Device-side building blocks of the own kernels: a grid-stride loop over indices and a
// block-wide reduction in a fixed order. Include from .cu files only.

#include <cuda_runtime.h>

#include <cstdint>

#include "ops/cuda/launch.h"

namespace lockstep::cuda {

template <typename Fn>
__global__ void ForEachIndexKernel(int64_t n, Fn fn) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    fn(i);
  }
}

// Calls fn(i) for every i in [0, n) on `stream`; fn is a functor holding its pointers.
template <typename Fn>
cudaError_t ForEachIndex(int64_t n, cudaStream_t stream, Fn fn) {
  if (n == 0) return cudaSuccess;
  ForEachIndexKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(n, fn);
  return cudaGetLastError();
}

// Combines one value per thread of a kThreadsPerBlock-thread block by a tree in shared memory.
// The order of the combinations is fixed, so sums come out the same every run; every thread
// gets the result. All threads of the block must call it.
template <typename T, typename Combine>
__device__ T BlockReduce(T value, Combine combine) {
  __shared__ T partial[kThreadsPerBlock];
  partial[threadIdx.x] = value;
  __syncthreads();
  for (unsigned half = kThreadsPerBlock / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      partial[threadIdx.x] = combine(partial[threadIdx.x], partial[threadIdx.x + half]);
    }
    __syncthreads();
  }
  const T result = partial[0];
  __syncthreads();  // the next call may overwrite partial[0]
  return result;
}

struct SumOf {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};

}  // namespace lockstep::cuda
