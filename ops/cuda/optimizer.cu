// Optimizer CUDA kernels: grid-stride loops over one tensor; the per-element math is in
// ops/optimizer_math.h.

#include "ops/cuda/device_util.cuh"
#include "ops/cuda/optimizer_kernels.h"

namespace lockstep::cuda {
namespace {

struct MomentumFn {
  math::MomentumParams params;
  DynamicScaleInputs dynamic;
  const float* lr;      // []
  const float* param;   // (n)
  const float* grad;    // (n)
  const float* moment;  // (n)
  float* new_param;     // (n)
  float* new_moment;    // (n)
  __device__ void operator()(int64_t i) const {
    math::MomentumParams p = params;
    if (dynamic.finite != nullptr) {
      if (*dynamic.finite == 0.0f) return;  // the step is skipped
      p.unscale = math::DynamicUnscale(p.unscale, *dynamic.loss_scale);
    }
    const math::ParamAndMoment next = math::MomentumStep(p, *lr, param[i], grad[i], moment[i]);
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
    new_accum[i] = math::AccumulateStep(*beta, accum[i], grad[i]);
  }
};

struct SetOneFn {
  float* value;  // []
  __device__ void operator()(int64_t) const { *value = 1.0f; }
};

struct AllFiniteMarkFn {
  const float* x;  // (n)
  float* finite;   // []
  // Racing writes all store 0.
  __device__ void operator()(int64_t i) const {
    if (!isfinite(x[i])) *finite = 0.0f;
  }
};

struct UpdateLossScaleFn {
  float* loss_scale;    // []
  int32_t* good_steps;  // []
  const float* finite;  // []
  float factor;
  int32_t window;
  __device__ void operator()(int64_t) const {
    const math::LossScaleState next =
        math::LossScaleStep({*loss_scale, *good_steps}, *finite != 0.0f, factor, window);
    *loss_scale = next.scale;
    *good_steps = next.good_steps;
  }
};

}  // namespace

cudaError_t LaunchMomentum(const math::MomentumParams& params, DynamicScaleInputs dynamic,
                           const float* lr, const float* param, const float* grad,
                           const float* moment, float* new_param, float* new_moment, int64_t n,
                           cudaStream_t stream) {
  return ForEachIndex(n, stream,
                      MomentumFn{params, dynamic, lr, param, grad, moment, new_param, new_moment});
}

cudaError_t LaunchAllFiniteStart(float* finite, cudaStream_t stream) {
  return ForEachIndex(1, stream, SetOneFn{finite});
}

cudaError_t LaunchAllFiniteMark(const float* x, int64_t n, float* finite, cudaStream_t stream) {
  return ForEachIndex(n, stream, AllFiniteMarkFn{x, finite});
}

cudaError_t LaunchUpdateLossScale(float* loss_scale, int32_t* good_steps, const float* finite,
                                  float factor, int32_t window, cudaStream_t stream) {
  return ForEachIndex(1, stream, UpdateLossScaleFn{loss_scale, good_steps, finite, factor, window});
}

cudaError_t LaunchAccumulate(const float* beta, const float* accum, const float* grad,
                             float* new_accum, int64_t n, cudaStream_t stream) {
  return ForEachIndex(n, stream, AccumulateFn{beta, accum, grad, new_accum});
}

}  // namespace lockstep::cuda
