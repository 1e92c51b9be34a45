#pragma once

// Per-channel and per-element math of the CUDA kernels around cuDNN's batch normalization
// (ops/cuda/batch_norm.cu); the CPU runs oneDNN's, whose conventions these follow.

#include <math.h>

#include <cstdint>

#include "ops/host_device.h"

namespace lockstep::math {

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

}  // namespace lockstep::math
