#pragma once

// Launchers of the optimizer CUDA kernels (ops/cuda/optimizer.cu). Each queues its work on
// `stream` and returns the launch's error; pointers are device memory. Scalars given as
// pointers (lr, beta) are device tensors, read by the kernel so that a schedule can change them
// without recompiling or synchronizing.

#include <cuda_runtime.h>

#include <cstdint>

#include "ops/cuda/optimizer_math.h"

namespace lockstep::cuda {

// One parameter tensor's Momentum update; new_param and new_moment may be param and moment.
cudaError_t LaunchMomentum(const MomentumParams& params,
                           const float* lr,      // []
                           const float* param,   // (n)
                           const float* grad,    // (n)
                           const float* moment,  // (n)
                           float* new_param,     // (n)
                           float* new_moment,    // (n)
                           int64_t n, cudaStream_t stream);

// new_accum = beta * accum + grad; new_accum may be accum.
cudaError_t LaunchAccumulate(const float* beta,   // []
                             const float* accum,  // (n)
                             const float* grad,   // (n)
                             float* new_accum,    // (n)
                             int64_t n, cudaStream_t stream);

}  // namespace lockstep::cuda
