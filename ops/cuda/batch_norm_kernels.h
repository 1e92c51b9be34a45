#pragma once

// Own device code around cuDNN's batch normalization: cuDNN keeps the inverse standard deviation
// where Lockstep's ops keep the biased variance, and the fused ReLU with its mask. And batch
// norm of its own for channels-last (NHWC) data, where cuDNN's legacy calls run 50-100 times
// slower than the bytes allow (measured on an H200: 21 ms for one bf16 layer1 batch norm at
// batch 256).

#include <cuda_runtime.h>

#include <cstdint>

namespace lockstep::cuda {

// var[c] = 1 / inv_std[c]^2 - epsilon, and back: inv_std[c] = 1 / sqrt(var[c] + epsilon).
cudaError_t LaunchVarianceFromInvStd(const float* inv_std, float epsilon, int64_t channels,
                                     float* var, cudaStream_t stream);
cudaError_t LaunchInvStdFromVariance(const float* var, float epsilon, int64_t channels,
                                     float* inv_std, cudaStream_t stream);
// The fused ReLU in place, with one mask byte per element (ops/batch_norm_math.h). T is float,
// __half or __nv_bfloat16.
template <typename T>
cudaError_t LaunchReluWithMask(T* y, uint8_t* mask, int64_t n, cudaStream_t stream);
// masked[i] = mask[i] ? dy[i] : 0.
template <typename T>
cudaError_t LaunchApplyMask(const T* dy, const uint8_t* mask, int64_t n, T* masked,
                            cudaStream_t stream);

// Channels-last batch norm: x is (rows, C), rows = N * H * W, channels the fastest dimension.
// Each channel's sums are taken per chunk of rows (one block per 32 pairs of channels, or 32
// channels where the count is odd, and chunk, in float), combined in double in a fixed order
// (deterministic), then applied element-wise with the shared math of ops/batch_norm_math.h.
struct ChannelPartials {
  double* first;   // (chunks, C): sum of x, or of dy
  double* second;  // (chunks, C): sum of x^2, or of dy * (x - mean)
  int64_t chunks;
};
// How many chunks of rows the sums use: about 1024 blocks of 64 channels in all, each with at
// least 128 rows.
inline int64_t ChannelChunks(int64_t rows, int64_t channels) {
  const int64_t tiles = channels > 0 ? (channels + 63) / 64 : 1;
  const int64_t wanted = tiles >= 1024 ? 1 : 1024 / tiles;
  const int64_t most = (rows + 127) / 128;
  return wanted < most ? wanted : (most > 0 ? most : 1);
}

struct NormForwardVectors {  // (C) each, float32
  const float* gamma;
  const float* beta;
  float* saved_mean;
  float* saved_var;     // biased
  float* running_mean;  // updated in place
  float* running_var;   // updated in place, with the unbiased variance
  float* scale;         // workspace: gamma * inv_std
  float* shift;         // workspace: beta - mean * scale
};
// y = (x - mean) * inv_std * gamma + beta over the batch's statistics; with `mask`, the fused
// ReLU and its mask bytes. `momentum` weighs the old running averages.
template <typename T>
cudaError_t LaunchNhwcBatchNorm(const T* x, int64_t rows, int64_t channels, float momentum,
                                float epsilon, const NormForwardVectors& v,
                                const ChannelPartials& partials, T* y, uint8_t* mask,
                                cudaStream_t stream);

struct NormBackwardVectors {  // (C) each, float32
  const float* gamma;
  const float* saved_mean;
  const float* saved_var;
  float* dgamma;
  float* dbeta;
  float* inv_std;        // workspace
  float* gamma_inv_std;  // workspace
  float* mean_dy;        // workspace
  float* mean_dy_x_hat;  // workspace
};
// dx, dgamma and dbeta from dy (masked by the fused ReLU's `mask` when it is not null).
template <typename T>
cudaError_t LaunchNhwcBatchNormGrad(const T* x, const T* dy, const uint8_t* mask, int64_t rows,
                                    int64_t channels, float epsilon, const NormBackwardVectors& v,
                                    const ChannelPartials& partials, T* dx, cudaStream_t stream);

}  // namespace lockstep::cuda
