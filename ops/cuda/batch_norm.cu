#include "ops/batch_norm_math.h"
#include "ops/cuda/batch_norm_kernels.h"
#include "ops/cuda/device_util.cuh"

namespace lockstep::cuda {
namespace {

struct VarianceFromInvStdFn {
  const float* inv_std;  // (C)
  float epsilon;
  float* var;  // (C)
  __device__ void operator()(int64_t c) const {
    var[c] = math::VarianceFromInvStd(inv_std[c], epsilon);
  }
};

struct InvStdFromVarianceFn {
  const float* var;  // (C)
  float epsilon;
  float* inv_std;  // (C)
  __device__ void operator()(int64_t c) const {
    inv_std[c] = math::InvStdFromVariance(var[c], epsilon);
  }
};

struct ReluWithMaskFn {
  float* y;       // (N, C, ...) in place
  uint8_t* mask;  // (N * C * ...)
  __device__ void operator()(int64_t i) const {
    mask[i] = math::ReluMask(y[i]);
    y[i] = math::Masked(y[i], mask[i]);
  }
};

struct ApplyMaskFn {
  const float* dy;      // (N, C, ...)
  const uint8_t* mask;  // (N * C * ...)
  float* masked;        // (N, C, ...)
  __device__ void operator()(int64_t i) const { masked[i] = math::Masked(dy[i], mask[i]); }
};

}  // namespace

cudaError_t LaunchVarianceFromInvStd(const float* inv_std, float epsilon, int64_t channels,
                                     float* var, cudaStream_t stream) {
  return ForEachIndex(channels, stream, VarianceFromInvStdFn{inv_std, epsilon, var});
}

cudaError_t LaunchInvStdFromVariance(const float* var, float epsilon, int64_t channels,
                                     float* inv_std, cudaStream_t stream) {
  return ForEachIndex(channels, stream, InvStdFromVarianceFn{var, epsilon, inv_std});
}

cudaError_t LaunchReluWithMask(float* y, uint8_t* mask, int64_t n, cudaStream_t stream) {
  return ForEachIndex(n, stream, ReluWithMaskFn{y, mask});
}

cudaError_t LaunchApplyMask(const float* dy, const uint8_t* mask, int64_t n, float* masked,
                            cudaStream_t stream) {
  return ForEachIndex(n, stream, ApplyMaskFn{dy, mask, masked});
}

}  // namespace lockstep::cuda
