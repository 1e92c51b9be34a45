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

constexpr int kTileChannels = 32;  // one warp across 32 consecutive channels: coalesced rows
constexpr int kRowLanes = 8;       // warps per block, each on every 8th row of the chunk

// Per channel and chunk of rows: the sums of x and x^2 (kGrad false), or of dy' and
// dy' * (x - mean) with dy' the masked dy (kGrad true). Block (32, 8), grid (tiles, chunks).
template <typename T, bool kGrad>
__global__ void ChannelSumsKernel(const T* x, const T* dy, const uint8_t* mask, const float* mean,
                                  int64_t rows, int64_t channels, int64_t rows_per_chunk,
                                  ChannelPartials partials) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kTileChannels + threadIdx.x;
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * rows_per_chunk;
  const int64_t end = min(rows, begin + rows_per_chunk);
  float first = 0.0f, second = 0.0f;
  if (c < channels) {
    const float m = kGrad ? mean[c] : 0.0f;
    for (int64_t r = begin + threadIdx.y; r < end; r += kRowLanes) {
      const int64_t i = r * channels + c;
      const float value = ToF32(x[i]);
      if constexpr (kGrad) {
        float g = ToF32(dy[i]);
        if (mask != nullptr) g = math::Masked(g, mask[i]);
        first += g;
        second += g * (value - m);
      } else {
        first += value;
        second += value * value;
      }
    }
  }
  __shared__ float firsts[kRowLanes][kTileChannels];
  __shared__ float seconds[kRowLanes][kTileChannels];
  firsts[threadIdx.y][threadIdx.x] = first;
  seconds[threadIdx.y][threadIdx.x] = second;
  __syncthreads();
  if (threadIdx.y != 0 || c >= channels) return;
  double total_first = 0.0, total_second = 0.0;
  for (int lane = 0; lane < kRowLanes; ++lane) {
    total_first += firsts[lane][threadIdx.x];
    total_second += seconds[lane][threadIdx.x];
  }
  partials.first[blockIdx.y * channels + c] = total_first;
  partials.second[blockIdx.y * channels + c] = total_second;
}

template <typename T, bool kGrad>
cudaError_t LaunchChannelSums(const T* x, const T* dy, const uint8_t* mask, const float* mean,
                              int64_t rows, int64_t channels, const ChannelPartials& partials,
                              cudaStream_t stream) {
  const int64_t rows_per_chunk = (rows + partials.chunks - 1) / partials.chunks;
  const dim3 grid((channels + kTileChannels - 1) / kTileChannels, partials.chunks);
  ChannelSumsKernel<T, kGrad><<<grid, dim3(kTileChannels, kRowLanes), 0, stream>>>(
      x, dy, mask, mean, rows, channels, rows_per_chunk, partials);
  return cudaGetLastError();
}

// A channel's two sums over every chunk, in chunk order.
__device__ inline void TotalSums(const ChannelPartials& partials, int64_t channels, int64_t c,
                                 double* first, double* second) {
  *first = 0.0;
  *second = 0.0;
  for (int64_t chunk = 0; chunk < partials.chunks; ++chunk) {
    *first += partials.first[chunk * channels + c];
    *second += partials.second[chunk * channels + c];
  }
}

struct ForwardStatisticsFn {
  ChannelPartials partials;
  int64_t channels;
  double count;
  float momentum, epsilon;
  NormForwardVectors v;
  __device__ void operator()(int64_t c) const {
    double sum, sum_squares;
    TotalSums(partials, channels, c, &sum, &sum_squares);
    const float mean = static_cast<float>(sum / count);
    const float var = math::BiasedVariance(sum, sum_squares, count);
    const float unbiased = count > 1.0 ? static_cast<float>(var * count / (count - 1.0)) : var;
    v.saved_mean[c] = mean;
    v.saved_var[c] = var;
    v.running_mean[c] = math::RunningAverage(v.running_mean[c], mean, momentum);
    v.running_var[c] = math::RunningAverage(v.running_var[c], unbiased, momentum);
    v.scale[c] = v.gamma[c] * math::InvStdFromVariance(var, epsilon);
    v.shift[c] = v.beta[c] - mean * v.scale[c];
  }
};

// The element-wise passes over (rows, C) data: block (32, 8) on 32 channels, each thread on one
// channel and every (8 * gridDim.y)-th row, so that its channel's values load once and no
// index is divided; about 4096 blocks in all.
dim3 ChannelRowsGrid(int64_t rows, int64_t channels) {
  const int64_t tiles = (channels + kTileChannels - 1) / kTileChannels;
  const int64_t wanted = tiles >= 4096 ? 1 : 4096 / tiles;
  const int64_t most = (rows + kRowLanes - 1) / kRowLanes;
  return dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(wanted < most ? wanted : most));
}

template <typename T>
__global__ void NormalizeKernel(const T* x, int64_t rows, int64_t channels, const float* scale,
                                const float* shift, T* y, uint8_t* mask) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kTileChannels + threadIdx.x;
  if (c >= channels) return;
  const float a = scale[c], b = shift[c];
  for (int64_t r = static_cast<int64_t>(blockIdx.y) * kRowLanes + threadIdx.y; r < rows;
       r += static_cast<int64_t>(gridDim.y) * kRowLanes) {
    const int64_t i = r * channels + c;
    float value = ToF32(x[i]) * a + b;
    if (mask != nullptr) {
      mask[i] = math::ReluMask(value);
      value = math::Masked(value, mask[i]);
    }
    y[i] = FromF32<T>(value);
  }
}

struct BackwardStatisticsFn {
  ChannelPartials partials;
  int64_t channels;
  double count;
  float epsilon;
  NormBackwardVectors v;
  __device__ void operator()(int64_t c) const {
    double sum_dy, sum_dy_x_mu;
    TotalSums(partials, channels, c, &sum_dy, &sum_dy_x_mu);
    const float inv_std = math::InvStdFromVariance(v.saved_var[c], epsilon);
    v.dbeta[c] = static_cast<float>(sum_dy);
    v.dgamma[c] = static_cast<float>(sum_dy_x_mu) * inv_std;
    v.inv_std[c] = inv_std;
    v.gamma_inv_std[c] = v.gamma[c] * inv_std;
    v.mean_dy[c] = static_cast<float>(sum_dy / count);
    v.mean_dy_x_hat[c] = static_cast<float>(sum_dy_x_mu / count) * inv_std;
  }
};

template <typename T>
__global__ void InputGradKernel(const T* x, const T* dy, const uint8_t* mask, int64_t rows,
                                int64_t channels, NormBackwardVectors v, T* dx) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kTileChannels + threadIdx.x;
  if (c >= channels) return;
  const float mean = v.saved_mean[c], inv_std = v.inv_std[c], gamma_inv_std = v.gamma_inv_std[c],
              mean_dy = v.mean_dy[c], mean_dy_x_hat = v.mean_dy_x_hat[c];
  for (int64_t r = static_cast<int64_t>(blockIdx.y) * kRowLanes + threadIdx.y; r < rows;
       r += static_cast<int64_t>(gridDim.y) * kRowLanes) {
    const int64_t i = r * channels + c;
    float g = ToF32(dy[i]);
    if (mask != nullptr) g = math::Masked(g, mask[i]);
    const float x_hat = (ToF32(x[i]) - mean) * inv_std;
    dx[i] = FromF32<T>(math::NormInputGrad(g, x_hat, gamma_inv_std, mean_dy, mean_dy_x_hat));
  }
}

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

template <typename T>
cudaError_t LaunchNhwcBatchNorm(const T* x, int64_t rows, int64_t channels, float momentum,
                                float epsilon, const NormForwardVectors& v,
                                const ChannelPartials& partials, T* y, uint8_t* mask,
                                cudaStream_t stream) {
  cudaError_t status =
      LaunchChannelSums<T, false>(x, nullptr, nullptr, nullptr, rows, channels, partials, stream);
  if (status != cudaSuccess) return status;
  status = ForEachIndex(
      channels, stream,
      ForwardStatisticsFn{partials, channels, static_cast<double>(rows), momentum, epsilon, v});
  if (status != cudaSuccess) return status;
  NormalizeKernel<T>
      <<<ChannelRowsGrid(rows, channels), dim3(kTileChannels, kRowLanes), 0, stream>>>(
          x, rows, channels, v.scale, v.shift, y, mask);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchNhwcBatchNormGrad(const T* x, const T* dy, const uint8_t* mask, int64_t rows,
                                    int64_t channels, float epsilon, const NormBackwardVectors& v,
                                    const ChannelPartials& partials, T* dx, cudaStream_t stream) {
  cudaError_t status =
      LaunchChannelSums<T, true>(x, dy, mask, v.saved_mean, rows, channels, partials, stream);
  if (status != cudaSuccess) return status;
  status =
      ForEachIndex(channels, stream,
                   BackwardStatisticsFn{partials, channels, static_cast<double>(rows), epsilon, v});
  if (status != cudaSuccess) return status;
  InputGradKernel<T>
      <<<ChannelRowsGrid(rows, channels), dim3(kTileChannels, kRowLanes), 0, stream>>>(
          x, dy, mask, rows, channels, v, dx);
  return cudaGetLastError();
}

#define LS_INSTANTIATE_NHWC(T)                                                                    \
  template cudaError_t LaunchNhwcBatchNorm(const T*, int64_t, int64_t, float, float,              \
                                           const NormForwardVectors&, const ChannelPartials&, T*, \
                                           uint8_t*, cudaStream_t);                               \
  template cudaError_t LaunchNhwcBatchNormGrad(const T*, const T*, const uint8_t*, int64_t,       \
                                               int64_t, float, const NormBackwardVectors&,        \
                                               const ChannelPartials&, T*, cudaStream_t)
LS_FOR_EACH_FLOAT_ELEMENT(LS_INSTANTIATE_NHWC);
#undef LS_INSTANTIATE_NHWC

}  // namespace lockstep::cuda
