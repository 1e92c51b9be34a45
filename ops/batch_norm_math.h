#pragma once

// Per-channel and per-element math of the CUDA kernels around cuDNN's batch normalization
// (ops/cuda/batch_norm.cu), of the CPU's own bf16 and f16 loops (ops/cpu/batch_norm_loops.cc) and
// of SyncBatchNorm's CPU and CUDA kernels (parallel/ops/); all follow oneDNN's conventions, which
// the CPU's float32 kernels run.

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

// A channel's mean from its sum over `count` values, divided in double and rounded once.
LS_HOST_DEVICE inline float ChannelMean(double sum, double count) {
  return static_cast<float>(sum / count);
}

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

// The running variance averages the unbiased variance; one value has no spread to unbias.
LS_HOST_DEVICE inline float UnbiasedVariance(float biased, double count) {
  return count > 1.0 ? static_cast<float>(biased * count / (count - 1.0)) : biased;
}

// Moves a channel's running statistics toward its batch mean and biased variance over `count`
// values.
LS_HOST_DEVICE inline void UpdateRunningStatistics(float mean, float var, double count,
                                                   float momentum, float* running_mean,
                                                   float* running_var) {
  *running_mean = RunningAverage(*running_mean, mean, momentum);
  *running_var = RunningAverage(*running_var, UnbiasedVariance(var, count), momentum);
}

// x_hat = (x - mean) * inv_std, the normalized value the gradient is written in.
LS_HOST_DEVICE inline float NormXHat(float x, float mean, float inv_std) {
  return (x - mean) * inv_std;
}

// y = (x - mean) * (gamma * inv_std) + beta: subtracting the mean first, as oneDNN's float32
// kernel does, keeps y's precision where the mean is large against the spread.
LS_HOST_DEVICE inline float NormOutput(float x, float mean, float gamma_inv_std, float beta) {
  return (x - mean) * gamma_inv_std + beta;
}

// The gradient of x from dy and x_hat = (x - mean) * inv_std, with the channel's
// gamma * inv_std and the means of dy and of dy * x_hat over the channel's values. In float, or in
// double where the means are double (SyncBatchNorm's, over the global batch): dx is a difference
// of nearly equal terms, and in float 4 SyncBatchNorm replicas drifted 1e-4 from one process's
// training in 10 steps (data_parallel_mpi_test).
template <typename T>
LS_HOST_DEVICE inline T NormInputGrad(T dy, T x_hat, T gamma_inv_std, T mean_dy, T mean_dy_x_hat) {
  return gamma_inv_std * (dy - mean_dy - x_hat * mean_dy_x_hat);
}

}  // namespace lockstep::math
