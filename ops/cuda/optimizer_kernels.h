#pragma once

// Launchers of the optimizer CUDA kernels (ops/cuda/optimizer.cu). Each queues its work on
// `stream` and returns the launch's error; pointers are device memory. Scalars given as
// pointers (lr, beta) are device tensors, read by the kernel so that a schedule can change them
// without recompiling or synchronizing.

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "ops/optimizer_math.h"

namespace lockstep::cuda {

// Under dynamic loss scaling, Momentum's scalars on the device; both null with a fixed scale.
struct DynamicScaleInputs {
  const float* loss_scale = nullptr;  // []
  const float* finite = nullptr;      // []: 0 skips the update
};

// The grouped kernels (Momentum over a bucket's tensors, AllFinite over every gradient) run as
// one launch: each block takes one chunk of one tensor from a table the kernel object uploads
// once (the memory plan keeps the addresses fixed).
inline constexpr int64_t kChunkElements = 8192;
struct TensorChunk {
  int32_t tensor;  // index into the kernel's tensor table
  int64_t begin;   // element range within that tensor
  int64_t end;
};
// The chunks of tensors of `sizes` elements, in tensor order.
std::vector<TensorChunk> ChunkTensors(const std::vector<int64_t>& sizes);

struct MomentumTensor {  // (n) each; new_param and new_moment may be param and moment
  const float* param;
  const float* grad;
  const float* moment;
  float* new_param;
  float* new_moment;
};
cudaError_t LaunchMomentum(const math::MomentumParams& params, DynamicScaleInputs dynamic,
                           const float* lr,                // []
                           const MomentumTensor* tensors,  // device table
                           const TensorChunk* chunks,      // device table
                           int64_t num_chunks, cudaStream_t stream);

// new_accum = beta * accum + grad; new_accum may be accum.
cudaError_t LaunchAccumulate(const float* beta,   // []
                             const float* accum,  // (n)
                             const float* grad,   // (n)
                             float* new_accum,    // (n)
                             int64_t n, cudaStream_t stream);

// finite = 1, then 0 if any element of the tables' tensors is Inf or NaN: two launches in all.
cudaError_t LaunchAllFinite(const float* const* tensors,  // device table
                            const TensorChunk* chunks,    // device table
                            int64_t num_chunks, float* finite, cudaStream_t stream);

// UpdateLossScale in place on the device scalars (one thread).
cudaError_t LaunchUpdateLossScale(float* loss_scale, int32_t* good_steps, const float* finite,
                                  float factor, int32_t window, cudaStream_t stream);

}  // namespace lockstep::cuda
