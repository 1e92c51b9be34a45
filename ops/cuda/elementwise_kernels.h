#pragma once

// Launchers of the element-wise CUDA kernels (ops/cuda/elementwise.cu). Each queues its work on
// `stream` and returns the launch's error; pointers are device memory. T is float, __half or
// __nv_bfloat16 (ops/cuda/element_types.h); the math is in float either way.

#include <cuda_runtime.h>

#include <cstdint>

namespace lockstep::cuda {

// y = a + b; a, b, y: (n).
template <typename T>
cudaError_t LaunchAdd(const T* a, const T* b, T* y, int64_t n, cudaStream_t stream);
// y = relu(a + b); a, b, y: (n).
template <typename T>
cudaError_t LaunchAddRelu(const T* a, const T* b, T* y, int64_t n, cudaStream_t stream);
// y = relu(x); x, y: (n).
template <typename T>
cudaError_t LaunchRelu(const T* x, T* y, int64_t n, cudaStream_t stream);
// dx = dy where x > 0; x, dy, dx: (n).
template <typename T>
cudaError_t LaunchReluGrad(const T* x, const T* dy, T* dx, int64_t n, cudaStream_t stream);
// dx = dy1 + dy2 where x > 0; x, dy1, dy2, dx: (n).
template <typename T>
cudaError_t LaunchAddReluGrad(const T* x, const T* dy1, const T* dy2, T* dx, int64_t n,
                              cudaStream_t stream);
// y = scale * x; x, y: (n).
template <typename T>
cudaError_t LaunchScale(const T* x, float scale, T* y, int64_t n, cudaStream_t stream);
// y = value; y: (n).
template <typename T>
cudaError_t LaunchFill(T* y, float value, int64_t n, cudaStream_t stream);
// y = static_cast<To>(x), through float where either side is 16-bit; x, y: (n). Instantiated
// for float, double, int32_t, int64_t, __half and __nv_bfloat16 both ways.
template <typename From, typename To>
cudaError_t LaunchCast(const From* x, To* y, int64_t n, cudaStream_t stream);

// x, y: (outer, channels, inner); bias: (channels).
template <typename T>
cudaError_t LaunchBiasAdd(const T* x, const T* bias, T* y, int64_t outer, int64_t channels,
                          int64_t inner, cudaStream_t stream);
// dbias[c] = the sum of dy[:, c, :]; dy: (outer, channels, inner), dbias: (channels). One block
// per channel, summed in double in a fixed order.
template <typename T>
cudaError_t LaunchBiasAddGrad(const T* dy, T* dbias, int64_t outer, int64_t channels, int64_t inner,
                              cudaStream_t stream);

}  // namespace lockstep::cuda
