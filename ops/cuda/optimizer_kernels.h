#pragma once

// Launchers of the optimizer CUDA kernels (ops/cuda/optimizer.cu). Each queues its work on
// `stream` and returns the launch's error; pointers are device memory. Scalars given as
// pointers (lr, beta) are device tensors, read by the kernel so that a schedule can change them
// without recompiling or synchronizing.

#include <cuda_runtime.h>

#include <cstdint>

#include "ops/optimizer_math.h"

namespace lockstep::cuda {

// Under dynamic loss scaling, Momentum's scalars on the device; both null with a fixed scale.
struct DynamicScaleInputs {
  const float* loss_scale = nullptr;  // []
  const float* finite = nullptr;      // []: 0 skips the update
};

// One parameter tensor's Momentum update; new_param and new_moment may be param and moment.
cudaError_t LaunchMomentum(const math::MomentumParams& params, DynamicScaleInputs dynamic,
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

// finite = 1 (a kernel on the stream), then AllFiniteMark on each tensor.
cudaError_t LaunchAllFiniteStart(float* finite, cudaStream_t stream);
// Sets finite to 0 when any of x's n elements is Inf or NaN.
cudaError_t LaunchAllFiniteMark(const float* x, int64_t n, float* finite, cudaStream_t stream);

// UpdateLossScale in place on the device scalars (one thread).
cudaError_t LaunchUpdateLossScale(float* loss_scale, int32_t* good_steps, const float* finite,
                                  float factor, int32_t window, cudaStream_t stream);

}  // namespace lockstep::cuda
