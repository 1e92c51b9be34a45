#include "ops/batch_norm_math.h"
#include "ops/cuda/batch_norm_kernels.h"
#include "ops/cuda/device_util.cuh"
#include "ops/cuda/element_type.cuh"

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

// Element i of the mask belongs to element i of y in whatever layout y is stored: the mask is
// the kernels' own, read only by the gradient with dy stored alike.
template <typename T>
struct ReluWithMaskFn {
  T* y;           // (N, C, ...) in place
  uint8_t* mask;  // (N * C * ...)
  __device__ void operator()(int64_t i) const {
    const float value = ToF32(y[i]);
    mask[i] = math::ReluMask(value);
    y[i] = FromF32<T>(math::Masked(value, mask[i]));
  }
};

template <typename T>
struct ApplyMaskFn {
  const T* dy;          // (N, C, ...)
  const uint8_t* mask;  // (N * C * ...)
  T* masked;            // (N, C, ...)
  __device__ void operator()(int64_t i) const {
    masked[i] = FromF32<T>(math::Masked(ToF32(dy[i]), mask[i]));
  }
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

template <typename T>
cudaError_t LaunchReluWithMask(T* y, uint8_t* mask, int64_t n, cudaStream_t stream) {
  return ForEachIndex(n, stream, ReluWithMaskFn<T>{y, mask});
}

template <typename T>
cudaError_t LaunchApplyMask(const T* dy, const uint8_t* mask, int64_t n, T* masked,
                            cudaStream_t stream) {
  return ForEachIndex(n, stream, ApplyMaskFn<T>{dy, mask, masked});
}

#define LS_INSTANTIATE_MASK(T)                                                  \
  template cudaError_t LaunchReluWithMask(T*, uint8_t*, int64_t, cudaStream_t); \
  template cudaError_t LaunchApplyMask(const T*, const uint8_t*, int64_t, T*, cudaStream_t)
LS_FOR_EACH_FLOAT_ELEMENT(LS_INSTANTIATE_MASK);
#undef LS_INSTANTIATE_MASK

}  // namespace lockstep::cuda
