#pragma once

// Per-channel and per-element math of the own kernels around cuDNN's batch normalization
// (batch_norm.cu), on the host too so tests/ops/cuda/batch_norm_cuda_test.cc checks it without
// a GPU.

#include <math.h>

#include <cstdint>

#include "ops/cuda/host_device.h"

namespace lockstep::cuda {

// cuDNN saves 1 / sqrt(var + epsilon) where the ops keep the biased variance itself.
LS_HOST_DEVICE inline float VarianceFromInvStd(float inv_std, float epsilon) {
  return 1.0f / (inv_std * inv_std) - epsilon;
}

LS_HOST_DEVICE inline float InvStdFromVariance(float var, float epsilon) {
  return 1.0f / sqrtf(var + epsilon);
}

// The fused ReLU as oneDNN's: zero where the normalized value is <= 0, so NaN passes and keeps
// its gradient; the mask byte is 1 where the value passes.
LS_HOST_DEVICE inline uint8_t ReluMask(float y) { return y <= 0.0f ? 0 : 1; }

LS_HOST_DEVICE inline float Masked(float value, uint8_t mask) { return mask ? value : 0.0f; }

}  // namespace lockstep::cuda
