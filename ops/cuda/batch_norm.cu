#include <algorithm>
#include <cstdint>

#include "ops/batch_norm_math.h"
#include "ops/cuda/batch_norm_kernels.h"
#include "ops/cuda/device_loops.cuh"
#include "ops/cuda/float_conversions.cuh"

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

constexpr int kTileLanes = 32;  // one warp across 32 consecutive channel packs: coalesced rows
constexpr int kRowLanes = 8;    // warps per block, each on every 8th row of the chunk

// The first of the V channels of this thread's pack.
__device__ inline int64_t FirstChannel(int v) {
  return (static_cast<int64_t>(blockIdx.x) * kTileLanes + threadIdx.x) * v;
}

// Each thread takes V consecutive channels of a row (Pack): at V = 2 a warp reads 64 channels, a
// whole 128-byte line of 16-bit data per load, where one channel a thread left half of each line
// for another load and fewer bytes in flight.

// Per channel and chunk of rows: the sums of x and x^2 (kGrad false), or of dy' and
// dy' * (x - mean) with dy' the masked dy (kGrad true). Block (32, 8), grid (tiles, chunks). Each
// channel's rows are summed in the same order whatever V is.
template <typename T, bool kGrad, int V>
__global__ void ChannelSumsKernel(const T* __restrict__ x, const T* __restrict__ dy,
                                  const uint8_t* __restrict__ mask, const float* mean, int64_t rows,
                                  int64_t channels, int64_t rows_per_chunk,
                                  ChannelPartials partials) {
  const int64_t c0 = FirstChannel(V);
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * rows_per_chunk;
  const int64_t end = min(rows, begin + rows_per_chunk);
  float first[V] = {}, second[V] = {};
  if (c0 < channels) {
    float m[V] = {};
    if constexpr (kGrad) {
      for (int k = 0; k < V; ++k) m[k] = mean[c0 + k];
    }
    // No store in this loop: the compiler issues the unrolled rows' loads together.
#pragma unroll 4
    for (int64_t r = begin + threadIdx.y; r < end; r += kRowLanes) {
      const int64_t i = r * channels + c0;
      const Pack<T, V> xs = LoadPack<V>(x, i);
      if constexpr (kGrad) {
        const Pack<T, V> gs = LoadPack<V>(dy, i);
        const Pack<uint8_t, V> keep = mask != nullptr ? LoadPack<V>(mask, i) : Pack<uint8_t, V>{};
        for (int k = 0; k < V; ++k) {
          float g = ToF32(gs.at[k]);
          if (mask != nullptr) g = math::Masked(g, keep.at[k]);
          first[k] += g;
          second[k] += g * (ToF32(xs.at[k]) - m[k]);
        }
      } else {
        for (int k = 0; k < V; ++k) {
          const float value = ToF32(xs.at[k]);
          first[k] += value;
          second[k] += value * value;
        }
      }
    }
  }
  __shared__ float firsts[kRowLanes][kTileLanes * V];
  __shared__ float seconds[kRowLanes][kTileLanes * V];
  for (int k = 0; k < V; ++k) {
    firsts[threadIdx.y][threadIdx.x * V + k] = first[k];
    seconds[threadIdx.y][threadIdx.x * V + k] = second[k];
  }
  __syncthreads();
  if (threadIdx.y != 0 || c0 >= channels) return;
  for (int k = 0; k < V; ++k) {
    double total_first = 0.0, total_second = 0.0;
    for (int lane = 0; lane < kRowLanes; ++lane) {
      total_first += firsts[lane][threadIdx.x * V + k];
      total_second += seconds[lane][threadIdx.x * V + k];
    }
    partials.first[blockIdx.y * channels + c0 + k] = total_first;
    partials.second[blockIdx.y * channels + c0 + k] = total_second;
  }
}

int64_t Tiles(int64_t channels, int v) {
  return (channels + kTileLanes * v - 1) / (kTileLanes * v);
}

// The blocks of `kernel` (kThreadsPerBlock threads each) the device runs at once.
cudaError_t BlocksPerWave(const void* kernel, int64_t* blocks) {
  int device = 0, sms = 0, per_sm = 0;
  cudaError_t status = cudaGetDevice(&device);
  if (status == cudaSuccess) {
    status = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  }
  if (status == cudaSuccess) {
    status = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreadsPerBlock, 0);
  }
  *blocks = int64_t{sms} * per_sm;
  return status;
}

// Sums over `partials.chunks` chunks of rows at most, fewer where one wave of blocks is reached:
// more would run as a second wave, mostly idle (BENCHMARKS.md, "Batch norm's CUDA kernels"). Sets
// partials.chunks to the chunks summed.
template <typename T, bool kGrad, int V>
cudaError_t LaunchChannelSums(const T* x, const T* dy, const uint8_t* mask, const float* mean,
                              int64_t rows, int64_t channels, ChannelPartials& partials,
                              cudaStream_t stream) {
  int64_t wave = 0;
  const cudaError_t status =
      BlocksPerWave(reinterpret_cast<const void*>(ChannelSumsKernel<T, kGrad, V>), &wave);
  if (status != cudaSuccess) return status;
  partials.chunks = std::clamp<int64_t>(wave / Tiles(channels, V), 1, partials.chunks);
  const int64_t rows_per_chunk = (rows + partials.chunks - 1) / partials.chunks;
  const dim3 grid(Tiles(channels, V), partials.chunks);
  ChannelSumsKernel<T, kGrad, V><<<grid, dim3(kTileLanes, kRowLanes), 0, stream>>>(
      x, dy, mask, mean, rows, channels, rows_per_chunk, partials);
  return cudaGetLastError();
}

constexpr int kCombineLanes = 32;  // block (32, 32): 32 channels, each over 32 lanes of chunks

// Each channel's two sums over every chunk, then finish(c, first, second). Lane y of a channel
// adds chunks y, y + 32, ..., and the lanes combine by a tree in a fixed order (deterministic).
// One thread a channel, adding up to 1024 chunks one after another, waited on each load in turn.
template <typename Finish>
__global__ void CombineChunksKernel(ChannelPartials partials, int64_t channels, Finish finish) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kCombineLanes + threadIdx.x;
  double first = 0.0, second = 0.0;
  if (c < channels) {
    for (int64_t chunk = threadIdx.y; chunk < partials.chunks; chunk += kCombineLanes) {
      first += partials.first[chunk * channels + c];
      second += partials.second[chunk * channels + c];
    }
  }
  __shared__ double firsts[kCombineLanes][kCombineLanes + 1];  // + 1: no bank conflicts
  __shared__ double seconds[kCombineLanes][kCombineLanes + 1];
  firsts[threadIdx.y][threadIdx.x] = first;
  seconds[threadIdx.y][threadIdx.x] = second;
  __syncthreads();
  for (unsigned half = kCombineLanes / 2; half > 0; half /= 2) {
    if (threadIdx.y < half) {
      firsts[threadIdx.y][threadIdx.x] += firsts[threadIdx.y + half][threadIdx.x];
      seconds[threadIdx.y][threadIdx.x] += seconds[threadIdx.y + half][threadIdx.x];
    }
    __syncthreads();
  }
  if (threadIdx.y == 0 && c < channels) finish(c, firsts[0][threadIdx.x], seconds[0][threadIdx.x]);
}

template <typename Finish>
cudaError_t CombineChunks(const ChannelPartials& partials, int64_t channels, Finish finish,
                          cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>((channels + kCombineLanes - 1) / kCombineLanes);
  CombineChunksKernel<<<blocks, dim3(kCombineLanes, kCombineLanes), 0, stream>>>(partials, channels,
                                                                                 finish);
  return cudaGetLastError();
}

struct ForwardStatisticsFn {
  double count;
  float momentum, epsilon;
  NormForwardVectors v;
  __device__ void operator()(int64_t c, double sum, double sum_squares) const {
    const float mean = math::ChannelMean(sum, count);
    const float var = math::BiasedVariance(sum, sum_squares, count);
    v.saved_mean[c] = mean;
    v.saved_var[c] = var;
    math::UpdateRunningStatistics(mean, var, count, momentum, &v.running_mean[c],
                                  &v.running_var[c]);
    v.scale[c] = v.gamma[c] * math::InvStdFromVariance(var, epsilon);
    v.shift[c] = v.beta[c] - mean * v.scale[c];
  }
};

// The element-wise passes over (rows, C) data: block (32, 8) on 32 channel packs, each thread on
// one pack and every (8 * gridDim.y)-th row, so that its channels' values load once and no index
// is divided; about 4096 blocks in all.
dim3 ChannelRowsGrid(int64_t rows, int64_t channels, int v) {
  const int64_t tiles = Tiles(channels, v);
  const int64_t wanted = tiles >= 4096 ? 1 : 4096 / tiles;
  const int64_t most = (rows + kRowLanes - 1) / kRowLanes;
  return dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(wanted < most ? wanted : most));
}

// Rows r = first, first + stride, ... below `rows`, kRowsInFlight at a time: load(u, r) for each
// row u of a batch, then store(u, r). All of a batch's loads are issued before its first store,
// past which the compiler moves no load (a row's load waited for the row before it to be stored, as
// far as the compiler knew x and y might overlap). The gradient keeps its one-row loop: with two
// or three loads a row, the registers batches take leave it fewer threads.
constexpr int kRowsInFlight = 4;
template <typename Load, typename Store>
__device__ void ForEachRowBatch(int64_t first, int64_t stride, int64_t rows, Load load,
                                Store store) {
  for (int64_t r = first; r < rows; r += kRowsInFlight * stride) {
#pragma unroll
    for (int u = 0; u < kRowsInFlight; ++u) {
      if (r + u * stride < rows) load(u, r + u * stride);
    }
#pragma unroll
    for (int u = 0; u < kRowsInFlight; ++u) {
      if (r + u * stride < rows) store(u, r + u * stride);
    }
  }
}

// This thread's first row and row stride in ChannelRowsGrid.
__device__ inline int64_t FirstRow() {
  return static_cast<int64_t>(blockIdx.y) * kRowLanes + threadIdx.y;
}
__device__ inline int64_t RowStride() { return static_cast<int64_t>(gridDim.y) * kRowLanes; }

template <typename T, int V>
__global__ void NormalizeKernel(const T* __restrict__ x, int64_t rows, int64_t channels,
                                const float* scale, const float* shift, T* __restrict__ y,
                                uint8_t* __restrict__ mask) {
  const int64_t c0 = FirstChannel(V);
  if (c0 >= channels) return;
  float a[V], b[V];
  for (int k = 0; k < V; ++k) {
    a[k] = scale[c0 + k];
    b[k] = shift[c0 + k];
  }
  Pack<T, V> xs[kRowsInFlight];
  ForEachRowBatch(
      FirstRow(), RowStride(), rows,
      [&](int u, int64_t r) { xs[u] = LoadPack<V>(x, r * channels + c0); },
      [&](int u, int64_t r) {
        Pack<T, V> ys;
        Pack<uint8_t, V> keep;
        for (int k = 0; k < V; ++k) {
          float value = ToF32(xs[u].at[k]) * a[k] + b[k];
          if (mask != nullptr) {
            keep.at[k] = math::ReluMask(value);
            value = math::Masked(value, keep.at[k]);
          }
          ys.at[k] = FromF32<T>(value);
        }
        StorePack<V>(y, r * channels + c0, ys);
        if (mask != nullptr) StorePack<V>(mask, r * channels + c0, keep);
      });
}

struct BackwardStatisticsFn {
  double count;
  float epsilon;
  NormBackwardVectors v;
  __device__ void operator()(int64_t c, double sum_dy, double sum_dy_x_mu) const {
    const float inv_std = math::InvStdFromVariance(v.saved_var[c], epsilon);
    v.dbeta[c] = static_cast<float>(sum_dy);
    v.dgamma[c] = static_cast<float>(sum_dy_x_mu) * inv_std;
    v.inv_std[c] = inv_std;
    v.gamma_inv_std[c] = v.gamma[c] * inv_std;
    v.mean_dy[c] = static_cast<float>(sum_dy / count);
    v.mean_dy_x_hat[c] = static_cast<float>(sum_dy_x_mu / count) * inv_std;
  }
};

template <typename T, int V>
__global__ void InputGradKernel(const T* x, const T* dy, const uint8_t* mask, int64_t rows,
                                int64_t channels, NormBackwardVectors v, T* dx) {
  const int64_t c0 = FirstChannel(V);
  if (c0 >= channels) return;
  float mean[V], inv_std[V], gamma_inv_std[V], mean_dy[V], mean_dy_x_hat[V];
  for (int k = 0; k < V; ++k) {
    mean[k] = v.saved_mean[c0 + k];
    inv_std[k] = v.inv_std[c0 + k];
    gamma_inv_std[k] = v.gamma_inv_std[c0 + k];
    mean_dy[k] = v.mean_dy[c0 + k];
    mean_dy_x_hat[k] = v.mean_dy_x_hat[c0 + k];
  }
#pragma unroll 4
  for (int64_t r = FirstRow(); r < rows; r += RowStride()) {
    const int64_t i = r * channels + c0;
    const Pack<T, V> xs = LoadPack<V>(x, i);
    const Pack<T, V> gs = LoadPack<V>(dy, i);
    const Pack<uint8_t, V> keep = mask != nullptr ? LoadPack<V>(mask, i) : Pack<uint8_t, V>{};
    Pack<T, V> dxs;
    for (int k = 0; k < V; ++k) {
      float g = ToF32(gs.at[k]);
      if (mask != nullptr) g = math::Masked(g, keep.at[k]);
      const float x_hat = math::NormXHat(ToF32(xs.at[k]), mean[k], inv_std[k]);
      dxs.at[k] =
          FromF32<T>(math::NormInputGrad(g, x_hat, gamma_inv_std[k], mean_dy[k], mean_dy_x_hat[k]));
    }
    StorePack<V>(dx, i, dxs);
  }
}

template <typename T, int V>
cudaError_t NhwcBatchNorm(const T* x, int64_t rows, int64_t channels, float momentum, float epsilon,
                          const NormForwardVectors& v, ChannelPartials partials, T* y,
                          uint8_t* mask, cudaStream_t stream) {
  cudaError_t status = LaunchChannelSums<T, false, V>(x, nullptr, nullptr, nullptr, rows, channels,
                                                      partials, stream);
  if (status != cudaSuccess) return status;
  status =
      CombineChunks(partials, channels,
                    ForwardStatisticsFn{static_cast<double>(rows), momentum, epsilon, v}, stream);
  if (status != cudaSuccess) return status;
  NormalizeKernel<T, V>
      <<<ChannelRowsGrid(rows, channels, V), dim3(kTileLanes, kRowLanes), 0, stream>>>(
          x, rows, channels, v.scale, v.shift, y, mask);
  return cudaGetLastError();
}

template <typename T, int V>
cudaError_t NhwcBatchNormGrad(const T* x, const T* dy, const uint8_t* mask, int64_t rows,
                              int64_t channels, float epsilon, const NormBackwardVectors& v,
                              ChannelPartials partials, T* dx, cudaStream_t stream) {
  cudaError_t status =
      LaunchChannelSums<T, true, V>(x, dy, mask, v.saved_mean, rows, channels, partials, stream);
  if (status != cudaSuccess) return status;
  status = CombineChunks(partials, channels,
                         BackwardStatisticsFn{static_cast<double>(rows), epsilon, v}, stream);
  if (status != cudaSuccess) return status;
  InputGradKernel<T, V>
      <<<ChannelRowsGrid(rows, channels, V), dim3(kTileLanes, kRowLanes), 0, stream>>>(
          x, dy, mask, rows, channels, v, dx);
  return cudaGetLastError();
}

// Pairs of channels where the channel count is even and every pointer allows pair accesses;
// else one channel a thread.
template <typename... E>
bool PairsFit(int64_t channels, const E*... data) {
  return channels % 2 == 0 && PacksFit<2>(data...);
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
  if (rows == 0 || channels == 0) return cudaSuccess;
  return PairsFit(channels, x, y, mask) ? NhwcBatchNorm<T, 2>(x, rows, channels, momentum, epsilon,
                                                              v, partials, y, mask, stream)
                                        : NhwcBatchNorm<T, 1>(x, rows, channels, momentum, epsilon,
                                                              v, partials, y, mask, stream);
}

template <typename T>
cudaError_t LaunchNhwcBatchNormGrad(const T* x, const T* dy, const uint8_t* mask, int64_t rows,
                                    int64_t channels, float epsilon, const NormBackwardVectors& v,
                                    const ChannelPartials& partials, T* dx, cudaStream_t stream) {
  if (rows == 0 || channels == 0) return cudaSuccess;
  return PairsFit(channels, x, dy, mask, static_cast<const T*>(dx))
             ? NhwcBatchNormGrad<T, 2>(x, dy, mask, rows, channels, epsilon, v, partials, dx,
                                       stream)
             : NhwcBatchNormGrad<T, 1>(x, dy, mask, rows, channels, epsilon, v, partials, dx,
                                       stream);
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
