#pragma once

// Device code of SyncBatchNorm on CUDA (plain NCHW): per-channel sums in double, the statistics
// from the all-reduced sums, and the element-wise passes. Launchers enqueue on `stream`.

#include <cuda_runtime.h>

#include <cstdint>

namespace lockstep::parallel::cuda {

// The shape of x as (N, C, P), P the pixels of one channel of one sample.
struct ChannelShape {
  int64_t n, channels, pixels;
  int64_t per_channel() const { return n * pixels; }
};

// sums[c] = sum of first(x), sums[C + c] = sum of second(x) over channel c: x and x * x in the
// forward; dy and dy * x_hat in the backward (mean and var given).
cudaError_t LaunchForwardSums(const float* x, ChannelShape shape, double* sums,
                              cudaStream_t stream);
cudaError_t LaunchBackwardSums(const float* x, const float* dy, const float* mean, const float* var,
                               float epsilon, ChannelShape shape, double* sums,
                               cudaStream_t stream);

// From the global sums of `count` elements: mean, biased var, the running averages in place
// (momentum * old + (1 - momentum) * batch, the variance unbiased), then y.
cudaError_t LaunchNormalize(const float* x, const float* gamma, const float* beta,
                            const double* sums, int64_t count, float epsilon, float momentum,
                            ChannelShape shape, float* mean, float* var, float* running_mean,
                            float* running_var, float* y, cudaStream_t stream);

// dgamma, dbeta from this rank's sums (before the AllReduce).
cudaError_t LaunchParameterGradients(const double* sums, int64_t channels, float* dgamma,
                                     float* dbeta, cudaStream_t stream);
// dx from the global sums of `count` elements.
cudaError_t LaunchInputGradient(const float* x, const float* gamma, const float* mean,
                                const float* var, const float* dy, const double* sums,
                                int64_t count, float epsilon, ChannelShape shape, float* dx,
                                cudaStream_t stream);

}  // namespace lockstep::parallel::cuda
