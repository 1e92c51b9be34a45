#pragma once

// Own CUDA pooling, with the CPU kernels' semantics exactly (windows as PyTorch's: symmetric
// padding counted as -inf by MaxPool; the first maximum in row-major order wins; AvgPool divides
// by the whole window or its in-bounds part). Gradients gather, each input element summing the
// windows that cover it in a fixed order, so they are deterministic without atomics. The window
// math is in ops/pool_math.h.

#include <cuda_runtime.h>

#include <cstdint>

#include "ops/pool_math.h"

namespace lockstep::cuda {

// y and, when argmax is not null, the window index (kh * KW + kw) of each output's maximum.
cudaError_t LaunchMaxPool(const float* x, const math::PoolGeometry& g, float* y, int32_t* argmax,
                          cudaStream_t stream);
// dx[i] = sum of dy over the windows whose maximum is at i.
cudaError_t LaunchMaxPoolGrad(const float* dy, const int32_t* argmax, const math::PoolGeometry& g,
                              float* dx, cudaStream_t stream);
cudaError_t LaunchAvgPool(const float* x, const math::PoolGeometry& g, float* y,
                          cudaStream_t stream);
cudaError_t LaunchAvgPoolGrad(const float* dy, const math::PoolGeometry& g, float* dx,
                              cudaStream_t stream);
// (N, C, H, W) -> (N, C): the mean of each plane, and its gradient spread back evenly.
cudaError_t LaunchGlobalAvgPool(const float* x, int64_t planes, int64_t plane, float* y,
                                cudaStream_t stream);
cudaError_t LaunchGlobalAvgPoolGrad(const float* dy, int64_t planes, int64_t plane, float* dx,
                                    cudaStream_t stream);

}  // namespace lockstep::cuda
