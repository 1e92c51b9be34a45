// Optimizer CUDA kernels: grid-stride loops over one tensor; the per-element math is in
// optimizer_math.h.

#include "ops/cuda/device_util.cuh"
#include "ops/cuda/optimizer_kernels.h"

namespace lockstep::cuda {
namespace {

struct MomentumFn {
  MomentumParams params;
  const float* lr;      // []
  const float* param;   // (n)
  const float* grad;    // (n)
  const float* moment;  // (n)
  float* new_param;     // (n)
  float* new_moment;    // (n)
  __device__ void operator()(int64_t i) const {
    const ParamAndMoment next = MomentumStep(params, *lr, param[i], grad[i], moment[i]);
    new_param[i] = next.param;
    new_moment[i] = next.moment;
  }
};

struct AccumulateFn {
  const float* beta;   // []
  const float* accum;  // (n)
  const float* grad;   // (n)
  float* new_accum;    // (n)
  __device__ void operator()(int64_t i) const {
    new_accum[i] = AccumulateStep(*beta, accum[i], grad[i]);
  }
};

}  // namespace

cudaError_t LaunchMomentum(const MomentumParams& params, const float* lr, const float* param,
                           const float* grad, const float* moment, float* new_param,
                           float* new_moment, int64_t n, cudaStream_t stream) {
  return ForEachIndex(n, stream,
                      MomentumFn{params, lr, param, grad, moment, new_param, new_moment});
}

cudaError_t LaunchAccumulate(const float* beta, const float* accum, const float* grad,
                             float* new_accum, int64_t n, cudaStream_t stream) {
  return ForEachIndex(n, stream, AccumulateFn{beta, accum, grad, new_accum});
}

}  // namespace lockstep::cuda
