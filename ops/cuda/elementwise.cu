// Element-wise CUDA kernels: one grid-stride loop each over functors that hold the pointers;
// the per-element math is in ops/elementwise_math.h.

#include "ops/cuda/device_util.cuh"
#include "ops/cuda/elementwise_kernels.h"
#include "ops/elementwise_math.h"

namespace lockstep::cuda {
namespace {

struct AddFn {
  const float* a;  // (n)
  const float* b;  // (n)
  float* y;        // (n)
  __device__ void operator()(int64_t i) const { y[i] = a[i] + b[i]; }
};

struct AddReluFn {
  const float* a;  // (n)
  const float* b;  // (n)
  float* y;        // (n)
  __device__ void operator()(int64_t i) const { y[i] = math::AddRelu(a[i], b[i]); }
};

struct ReluFn {
  const float* x;  // (n)
  float* y;        // (n)
  __device__ void operator()(int64_t i) const { y[i] = math::Relu(x[i]); }
};

struct ReluGradFn {
  const float* x;   // (n)
  const float* dy;  // (n)
  float* dx;        // (n)
  __device__ void operator()(int64_t i) const { dx[i] = math::ReluGrad(x[i], dy[i]); }
};

struct AddReluGradFn {
  const float* x;    // (n)
  const float* dy1;  // (n)
  const float* dy2;  // (n)
  float* dx;         // (n)
  __device__ void operator()(int64_t i) const { dx[i] = math::AddReluGrad(x[i], dy1[i], dy2[i]); }
};

struct ScaleFn {
  const float* x;  // (n)
  float scale;
  float* y;  // (n)
  __device__ void operator()(int64_t i) const { y[i] = scale * x[i]; }
};

struct FillFn {
  float* y;  // (n)
  float value;
  __device__ void operator()(int64_t i) const { y[i] = value; }
};

template <typename From, typename To>
struct CastFn {
  const From* x;  // (n)
  To* y;          // (n)
  __device__ void operator()(int64_t i) const { y[i] = static_cast<To>(x[i]); }
};

struct BiasAddFn {
  const float* x;     // (outer, channels, inner)
  const float* bias;  // (channels)
  float* y;           // (outer, channels, inner)
  int64_t channels, inner;
  __device__ void operator()(int64_t i) const { y[i] = x[i] + bias[(i / inner) % channels]; }
};

// Block c sums channel c: thread t takes elements t, t + blockDim, ... of the channel's
// outer * inner, in double as the CPU kernel.
__global__ void BiasAddGradKernel(const float* dy,  // (outer, channels, inner)
                                  float* dbias,     // (channels)
                                  int64_t outer, int64_t channels, int64_t inner) {
  const int64_t c = blockIdx.x;
  double sum = 0.0;
  for (int64_t t = threadIdx.x; t < outer * inner; t += blockDim.x) {
    const int64_t n = t / inner;
    sum += dy[(n * channels + c) * inner + t % inner];
  }
  sum = BlockReduce(sum, SumOf{});
  if (threadIdx.x == 0) dbias[c] = static_cast<float>(sum);
}

}  // namespace

cudaError_t LaunchAdd(const float* a, const float* b, float* y, int64_t n, cudaStream_t stream) {
  return ForEachIndex(n, stream, AddFn{a, b, y});
}

cudaError_t LaunchAddRelu(const float* a, const float* b, float* y, int64_t n,
                          cudaStream_t stream) {
  return ForEachIndex(n, stream, AddReluFn{a, b, y});
}

cudaError_t LaunchRelu(const float* x, float* y, int64_t n, cudaStream_t stream) {
  return ForEachIndex(n, stream, ReluFn{x, y});
}

cudaError_t LaunchReluGrad(const float* x, const float* dy, float* dx, int64_t n,
                           cudaStream_t stream) {
  return ForEachIndex(n, stream, ReluGradFn{x, dy, dx});
}

cudaError_t LaunchAddReluGrad(const float* x, const float* dy1, const float* dy2, float* dx,
                              int64_t n, cudaStream_t stream) {
  return ForEachIndex(n, stream, AddReluGradFn{x, dy1, dy2, dx});
}

cudaError_t LaunchScale(const float* x, float scale, float* y, int64_t n, cudaStream_t stream) {
  return ForEachIndex(n, stream, ScaleFn{x, scale, y});
}

cudaError_t LaunchFill(float* y, float value, int64_t n, cudaStream_t stream) {
  return ForEachIndex(n, stream, FillFn{y, value});
}

template <typename From, typename To>
cudaError_t LaunchCast(const From* x, To* y, int64_t n, cudaStream_t stream) {
  return ForEachIndex(n, stream, CastFn<From, To>{x, y});
}

// Every pair the Cast kernels of ops/cuda/elementwise.cc use.
#define LS_INSTANTIATE_CAST_FROM(From)                                           \
  template cudaError_t LaunchCast(const From*, float*, int64_t, cudaStream_t);   \
  template cudaError_t LaunchCast(const From*, double*, int64_t, cudaStream_t);  \
  template cudaError_t LaunchCast(const From*, int32_t*, int64_t, cudaStream_t); \
  template cudaError_t LaunchCast(const From*, int64_t*, int64_t, cudaStream_t)
LS_INSTANTIATE_CAST_FROM(float);
LS_INSTANTIATE_CAST_FROM(double);
LS_INSTANTIATE_CAST_FROM(int32_t);
LS_INSTANTIATE_CAST_FROM(int64_t);
#undef LS_INSTANTIATE_CAST_FROM

cudaError_t LaunchBiasAdd(const float* x, const float* bias, float* y, int64_t outer,
                          int64_t channels, int64_t inner, cudaStream_t stream) {
  return ForEachIndex(outer * channels * inner, stream, BiasAddFn{x, bias, y, channels, inner});
}

cudaError_t LaunchBiasAddGrad(const float* dy, float* dbias, int64_t outer, int64_t channels,
                              int64_t inner, cudaStream_t stream) {
  if (channels == 0) return cudaSuccess;
  BiasAddGradKernel<<<static_cast<unsigned>(channels), kThreadsPerBlock, 0, stream>>>(
      dy, dbias, outer, channels, inner);
  return cudaGetLastError();
}

}  // namespace lockstep::cuda
