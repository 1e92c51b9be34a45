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

// T is float, __half or __nv_bfloat16; windows are summed and compared in float.
// y and, when argmax is not null, the window index (kh * KW + kw) of each output's maximum,
// stored as y is.
template <typename T>
cudaError_t LaunchMaxPool(const T* x, const math::PoolGeometry& g, T* y, int32_t* argmax,
                          cudaStream_t stream);
// dx[i] = sum of dy over the windows whose maximum is at i.
template <typename T>
cudaError_t LaunchMaxPoolGrad(const T* dy, const int32_t* argmax, const math::PoolGeometry& g,
                              T* dx, cudaStream_t stream);
template <typename T>
cudaError_t LaunchAvgPool(const T* x, const math::PoolGeometry& g, T* y, cudaStream_t stream);
template <typename T>
cudaError_t LaunchAvgPoolGrad(const T* dy, const math::PoolGeometry& g, T* dx, cudaStream_t stream);
// (N, C, H, W) -> (N, C): the mean of each plane, and its gradient spread back evenly. The
// full-size side (x, or dx) is stored plain or channels-last; the other is (N, C) either way.
struct GlobalPoolGeometry {
  int64_t n, c, plane;  // plane: H * W
  bool channels_last;
};
template <typename T>
cudaError_t LaunchGlobalAvgPool(const T* x, const GlobalPoolGeometry& g, T* y, cudaStream_t stream);
template <typename T>
cudaError_t LaunchGlobalAvgPoolGrad(const T* dy, const GlobalPoolGeometry& g, T* dx,
                                    cudaStream_t stream);

}  // namespace lockstep::cuda
