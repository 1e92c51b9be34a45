#pragma once

// Launchers of the element-wise CUDA kernels (ops/cuda/elementwise.cu). Each queues its work on
// `stream` and returns the launch's error; pointers are device memory.

#include <cuda_runtime.h>

#include <cstdint>

namespace lockstep::cuda {

// y = a + b; a, b, y: (n).
cudaError_t LaunchAdd(const float* a, const float* b, float* y, int64_t n, cudaStream_t stream);
// y = relu(a + b); a, b, y: (n).
cudaError_t LaunchAddRelu(const float* a, const float* b, float* y, int64_t n, cudaStream_t stream);
// y = relu(x); x, y: (n).
cudaError_t LaunchRelu(const float* x, float* y, int64_t n, cudaStream_t stream);
// dx = dy where x > 0; x, dy, dx: (n).
cudaError_t LaunchReluGrad(const float* x, const float* dy, float* dx, int64_t n,
                           cudaStream_t stream);
// dx = dy1 + dy2 where x > 0; x, dy1, dy2, dx: (n).
cudaError_t LaunchAddReluGrad(const float* x, const float* dy1, const float* dy2, float* dx,
                              int64_t n, cudaStream_t stream);
// y = scale * x; x, y: (n).
cudaError_t LaunchScale(const float* x, float scale, float* y, int64_t n, cudaStream_t stream);
// y = value; y: (n).
cudaError_t LaunchFill(float* y, float value, int64_t n, cudaStream_t stream);
// y = static_cast<To>(x); x, y: (n). Instantiated for float, double, int32_t and int64_t.
template <typename From, typename To>
cudaError_t LaunchCast(const From* x, To* y, int64_t n, cudaStream_t stream);

// x, y: (outer, channels, inner); bias: (channels).
cudaError_t LaunchBiasAdd(const float* x, const float* bias, float* y, int64_t outer,
                          int64_t channels, int64_t inner, cudaStream_t stream);
// dbias[c] = the sum of dy[:, c, :]; dy: (outer, channels, inner), dbias: (channels). One block
// per channel, summed in double in a fixed order.
cudaError_t LaunchBiasAddGrad(const float* dy, float* dbias, int64_t outer, int64_t channels,
                              int64_t inner, cudaStream_t stream);

}  // namespace lockstep::cuda
