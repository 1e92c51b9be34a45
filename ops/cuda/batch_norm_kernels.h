#pragma once

// Own device code around cuDNN's batch normalization: cuDNN keeps the inverse standard deviation
// where Lockstep's ops keep the biased variance, and the fused ReLU with its mask.

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

}  // namespace lockstep::cuda
