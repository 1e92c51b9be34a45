#pragma once

// Launchers of the element-wise CUDA kernels (ops/cuda/elementwise.cu). Each queues its work on
// `stream` and returns the launch's error; pointers are device memory. T is float, __half or
// __nv_bfloat16 (ops/cuda/device_floats.h); the math is in float either way.

#include <cuda_runtime.h>

#include <array>
#include <cstddef>
#include <cstdint>

namespace lockstep::cuda {

// y[i] = op(x[0][i], x[1][i], ...) for a functor of ops/elementwise_math.h; x[j], y: (n). Defined
// in ops/cuda/pointwise.cuh, instantiated in ops/cuda/elementwise.cu for each functor.
template <typename T, typename Op, size_t kInputs>
cudaError_t LaunchPointwise(Op op, const std::array<const T*, kInputs>& x, T* y, int64_t n,
                            cudaStream_t stream);
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
