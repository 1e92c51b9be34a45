// Optimizer CUDA kernels: Momentum and AllFinite one block per chunk of a tensor table (one
// launch for many tensors), the others grid-stride loops over one tensor; the per-element math
// is in ops/optimizer_math.h.

#include "ops/cuda/device_loops.cuh"
#include "ops/cuda/optimizer_kernels.h"

namespace lockstep::cuda {
namespace {

constexpr int kChunkThreads = 256;

__global__ void MomentumKernel(math::MomentumParams params, DynamicScaleInputs dynamic,
                               const float* lr, const MomentumTensor* tensors,
                               const TensorChunk* chunks) {
  if (dynamic.finite != nullptr) {
    if (*dynamic.finite == 0.0f) return;  // the step is skipped
    params.unscale = math::DynamicUnscale(params.unscale, *dynamic.loss_scale);
  }
  const TensorChunk chunk = chunks[blockIdx.x];
  const MomentumTensor t = tensors[chunk.tensor];
  const float rate = *lr;
  for (int64_t i = chunk.begin + threadIdx.x; i < chunk.end; i += blockDim.x) {
    const math::ParamAndMoment next =
        math::MomentumStep(params, rate, t.param[i], t.grad[i], t.moment[i]);
    t.new_param[i] = next.param;
    t.new_moment[i] = next.moment;
  }
}

// Racing writes all store 0.
__global__ void AllFiniteKernel(const float* const* tensors, const TensorChunk* chunks,
                                float* finite) {
  const TensorChunk chunk = chunks[blockIdx.x];
  const float* x = tensors[chunk.tensor];
  for (int64_t i = chunk.begin + threadIdx.x; i < chunk.end; i += blockDim.x) {
    if (!isfinite(x[i])) *finite = 0.0f;
  }
}

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
                           const float* lr, const MomentumTensor* tensors,
                           const TensorChunk* chunks, int64_t num_chunks, cudaStream_t stream) {
  if (num_chunks == 0) return cudaSuccess;
  MomentumKernel<<<num_chunks, kChunkThreads, 0, stream>>>(params, dynamic, lr, tensors, chunks);
  return cudaGetLastError();
}

cudaError_t LaunchAllFinite(const float* const* tensors, const TensorChunk* chunks,
                            int64_t num_chunks, float* finite, cudaStream_t stream) {
  cudaError_t status = ForEachIndex(1, stream, SetOneFn{finite});
  if (status != cudaSuccess || num_chunks == 0) return status;
  AllFiniteKernel<<<num_chunks, kChunkThreads, 0, stream>>>(tensors, chunks, finite);
  return cudaGetLastError();
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
