#pragma once

// Per-channel and per-element math of the CUDA kernels around cuDNN's batch normalization
// (ops/cuda/batch_norm.cu) and of the CPU's own bf16 and f16 loops (ops/cpu/batch_norm_loops.cc);
// both follow oneDNN's conventions, which the CPU's float32 kernels run.

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

// The biased variance from a channel's sum and sum of squares over `count` values, in double so
// the difference of the two means keeps float32's precision.
LS_HOST_DEVICE inline float BiasedVariance(double sum, double sum_squares, double count) {
  const double mean = sum / count;
  const double var = sum_squares / count - mean * mean;
  return var > 0.0 ? static_cast<float>(var) : 0.0f;
}

// running = momentum * running + (1 - momentum) * batch, as MindSpore.
LS_HOST_DEVICE inline float RunningAverage(float running, float batch, float momentum) {
  return momentum * running + (1.0f - momentum) * batch;
}

// The gradient of x from dy and x_hat = (x - mean) * inv_std, with the channel's
// gamma * inv_std and the means of dy and of dy * x_hat over the channel's values.
LS_HOST_DEVICE inline float NormInputGrad(float dy, float x_hat, float gamma_inv_std, float mean_dy,
                                          float mean_dy_x_hat) {
  return gamma_inv_std * (dy - mean_dy - x_hat * mean_dy_x_hat);
}

}  // namespace lockstep::math
