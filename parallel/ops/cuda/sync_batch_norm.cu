// The per-channel and per-element formulas are ops/batch_norm_math.h's, which the CPU twin
// (parallel/ops/cpu/sync_batch_norm.cc) runs too.

#include "ops/batch_norm_math.h"
#include "ops/cuda/device_loops.cuh"
#include "parallel/ops/cuda/sync_batch_norm_kernels.h"

namespace lockstep::parallel::cuda {
namespace {

using ::lockstep::cuda::BlockReduce;
using ::lockstep::cuda::BlocksFor;
using ::lockstep::cuda::kThreadsPerBlock;
using ::lockstep::cuda::SumOf;

// One block per channel, combined by BlockReduce's fixed-order tree: the same sums every run.
template <typename First, typename Second>
__device__ void ChannelSums(ChannelShape shape, double* sums, First first, Second second) {
  const int64_t c = blockIdx.x;
  double sa = 0.0, sb = 0.0;
  for (int64_t k = threadIdx.x; k < shape.n * shape.pixels; k += blockDim.x) {
    const int64_t i = ((k / shape.pixels) * shape.channels + c) * shape.pixels + k % shape.pixels;
    sa += first(i);
    sb += second(i);
  }
  sa = BlockReduce(sa, SumOf());
  sb = BlockReduce(sb, SumOf());
  if (threadIdx.x == 0) {
    sums[c] = sa;
    sums[shape.channels + c] = sb;
  }
}

__global__ void ForwardSums(const float* x, ChannelShape shape, double* sums) {
  ChannelSums(
      shape, sums, [&](int64_t i) { return double{x[i]}; },
      [&](int64_t i) { return double{x[i]} * x[i]; });
}

__global__ void BackwardSums(const float* x, const float* dy, const float* mean, const float* var,
                             float epsilon, ChannelShape shape, double* sums) {
  const int64_t c = blockIdx.x;
  const float m = mean[c], inv_std = math::InvStdFromVariance(var[c], epsilon);
  ChannelSums(
      shape, sums, [&](int64_t i) { return double{dy[i]}; },
      [&](int64_t i) { return double{dy[i]} * math::NormXHat(x[i], m, inv_std); });
}

__global__ void Statistics(const double* sums, double count, float momentum, int64_t channels,
                           float* mean, float* var, float* running_mean, float* running_var) {
  const int64_t c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= channels) return;
  mean[c] = math::ChannelMean(sums[c], count);
  var[c] = math::BiasedVariance(sums[c], sums[channels + c], count);
  math::UpdateRunningStatistics(mean[c], var[c], count, momentum, &running_mean[c],
                                &running_var[c]);
}

__global__ void Normalize(const float* x, const float* gamma, const float* beta, const float* mean,
                          const float* var, float epsilon, ChannelShape shape, float* y) {
  const int64_t total = shape.n * shape.channels * shape.pixels;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = (i / shape.pixels) % shape.channels;
    const float gamma_inv_std = gamma[c] * math::InvStdFromVariance(var[c], epsilon);
    y[i] = math::NormOutput(x[i], mean[c], gamma_inv_std, beta[c]);
  }
}

__global__ void ParameterGradients(const double* sums, int64_t channels, float* dgamma,
                                   float* dbeta) {
  const int64_t c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= channels) return;
  dbeta[c] = static_cast<float>(sums[c]);
  dgamma[c] = static_cast<float>(sums[channels + c]);
}

__global__ void InputGradient(const float* x, const float* gamma, const float* mean,
                              const float* var, const float* dy, const double* sums, double count,
                              float epsilon, ChannelShape shape, float* dx) {
  const int64_t total = shape.n * shape.channels * shape.pixels;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = (i / shape.pixels) % shape.channels;
    const float inv_std = math::InvStdFromVariance(var[c], epsilon);
    dx[i] = static_cast<float>(math::NormInputGrad<double>(
        dy[i], math::NormXHat(x[i], mean[c], inv_std), gamma[c] * inv_std, sums[c] / count,
        sums[shape.channels + c] / count));
  }
}

}  // namespace

cudaError_t LaunchForwardSums(const float* x, ChannelShape shape, double* sums,
                              cudaStream_t stream) {
  ForwardSums<<<static_cast<unsigned>(shape.channels), kThreadsPerBlock, 0, stream>>>(x, shape,
                                                                                      sums);
  return cudaGetLastError();
}

cudaError_t LaunchBackwardSums(const float* x, const float* dy, const float* mean, const float* var,
                               float epsilon, ChannelShape shape, double* sums,
                               cudaStream_t stream) {
  BackwardSums<<<static_cast<unsigned>(shape.channels), kThreadsPerBlock, 0, stream>>>(
      x, dy, mean, var, epsilon, shape, sums);
  return cudaGetLastError();
}

cudaError_t LaunchNormalize(const float* x, const float* gamma, const float* beta,
                            const double* sums, int64_t count, float epsilon, float momentum,
                            ChannelShape shape, float* mean, float* var, float* running_mean,
                            float* running_var, float* y, cudaStream_t stream) {
  Statistics<<<BlocksFor(shape.channels), kThreadsPerBlock, 0, stream>>>(
      sums, static_cast<double>(count), momentum, shape.channels, mean, var, running_mean,
      running_var);
  Normalize<<<BlocksFor(shape.n * shape.channels * shape.pixels), kThreadsPerBlock, 0, stream>>>(
      x, gamma, beta, mean, var, epsilon, shape, y);
  return cudaGetLastError();
}

cudaError_t LaunchParameterGradients(const double* sums, int64_t channels, float* dgamma,
                                     float* dbeta, cudaStream_t stream) {
  ParameterGradients<<<BlocksFor(channels), kThreadsPerBlock, 0, stream>>>(sums, channels, dgamma,
                                                                           dbeta);
  return cudaGetLastError();
}

cudaError_t LaunchInputGradient(const float* x, const float* gamma, const float* mean,
                                const float* var, const float* dy, const double* sums,
                                int64_t count, float epsilon, ChannelShape shape, float* dx,
                                cudaStream_t stream) {
  InputGradient<<<BlocksFor(shape.n * shape.channels * shape.pixels), kThreadsPerBlock, 0,
                  stream>>>(x, gamma, mean, var, dy, sums, static_cast<double>(count), epsilon,
                            shape, dx);
  return cudaGetLastError();
}

}  // namespace lockstep::parallel::cuda
