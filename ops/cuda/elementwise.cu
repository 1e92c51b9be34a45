// Element-wise CUDA kernels: the pointwise ops' launcher (ops/cuda/pointwise.cuh) instantiated for
// their functors of ops/elementwise_math.h, and the kernels of Fill, Cast and the bias, whose
// operands differ in type or length.

#include <array>

#include "ops/cuda/device_loops.cuh"
#include "ops/cuda/elementwise_kernels.h"
#include "ops/cuda/float_conversions.cuh"
#include "ops/cuda/pointwise.cuh"
#include "ops/elementwise_math.h"

namespace lockstep::cuda {
namespace {

struct ConstantOp {
  float value;
  __device__ float operator()() const { return value; }
};

template <typename From, typename To>
struct CastFn {
  const From* x;  // (n)
  To* y;          // (n)
  __device__ void operator()(int64_t i) const { y[i] = Converted<To>(x[i]); }
};

template <typename T>
struct BiasAddFn {
  const T* x;     // (outer, channels, inner)
  const T* bias;  // (channels)
  T* y;           // (outer, channels, inner)
  int64_t channels, inner;
  __device__ void operator()(int64_t i) const {
    y[i] = FromF32<T>(ToF32(x[i]) + ToF32(bias[(i / inner) % channels]));
  }
};

// Block c sums channel c: thread t takes elements t, t + blockDim, ... of the channel's
// outer * inner, in double as the CPU kernel, whatever the element type.
template <typename T>
__global__ void BiasAddGradKernel(const T* dy,  // (outer, channels, inner)
                                  T* dbias,     // (channels)
                                  int64_t outer, int64_t channels, int64_t inner) {
  const int64_t c = blockIdx.x;
  double sum = 0.0;
  for (int64_t t = threadIdx.x; t < outer * inner; t += blockDim.x) {
    const int64_t n = t / inner;
    sum += ToF32(dy[(n * channels + c) * inner + t % inner]);
  }
  sum = BlockReduce(sum, SumOf{});
  if (threadIdx.x == 0) dbias[c] = FromF32<T>(static_cast<float>(sum));
}

}  // namespace

template <typename T>
cudaError_t LaunchFill(T* y, float value, int64_t n, cudaStream_t stream) {
  return LaunchPointwise<T, ConstantOp, 0>({value}, {}, y, n, stream);
}

template <typename T>
cudaError_t LaunchBiasAdd(const T* x, const T* bias, T* y, int64_t outer, int64_t channels,
                          int64_t inner, cudaStream_t stream) {
  return ForEachIndex(outer * channels * inner, stream, BiasAddFn<T>{x, bias, y, channels, inner});
}

template <typename T>
cudaError_t LaunchBiasAddGrad(const T* dy, T* dbias, int64_t outer, int64_t channels, int64_t inner,
                              cudaStream_t stream) {
  if (channels == 0) return cudaSuccess;
  BiasAddGradKernel<T><<<static_cast<unsigned>(channels), kThreadsPerBlock, 0, stream>>>(
      dy, dbias, outer, channels, inner);
  return cudaGetLastError();
}

#define LS_INSTANTIATE_ELEMENTWISE(T)                                                   \
  template cudaError_t LaunchFill(T*, float, int64_t, cudaStream_t);                    \
  template cudaError_t LaunchBiasAdd(const T*, const T*, T*, int64_t, int64_t, int64_t, \
                                     cudaStream_t);                                     \
  template cudaError_t LaunchBiasAddGrad(const T*, T*, int64_t, int64_t, int64_t, cudaStream_t)
LS_FOR_EACH_FLOAT_ELEMENT(LS_INSTANTIATE_ELEMENTWISE);
#undef LS_INSTANTIATE_ELEMENTWISE

// The pointwise ops' functors, each in every float element type: a new op adds its line.
#define LS_INSTANTIATE_POINTWISE_IN(T, Op)                                                        \
  template cudaError_t LaunchPointwise(Op, const std::array<const T*, math::InputsOf<Op>()>&, T*, \
                                       int64_t, cudaStream_t)
#define LS_INSTANTIATE_POINTWISE(Op)       \
  LS_INSTANTIATE_POINTWISE_IN(float, Op);  \
  LS_INSTANTIATE_POINTWISE_IN(__half, Op); \
  LS_INSTANTIATE_POINTWISE_IN(__nv_bfloat16, Op)
LS_INSTANTIATE_POINTWISE(math::AddOp);
LS_INSTANTIATE_POINTWISE(math::AddReluOp);
LS_INSTANTIATE_POINTWISE(math::AddReluGradOp);
LS_INSTANTIATE_POINTWISE(math::ReluOp);
LS_INSTANTIATE_POINTWISE(math::ReluGradOp);
LS_INSTANTIATE_POINTWISE(math::ScaleOp);
#undef LS_INSTANTIATE_POINTWISE
#undef LS_INSTANTIATE_POINTWISE_IN

template <typename From, typename To>
cudaError_t LaunchCast(const From* x, To* y, int64_t n, cudaStream_t stream) {
  return ForEachIndex(n, stream, CastFn<From, To>{x, y});
}

// Every pair the Cast kernels of ops/cuda/elementwise.cc use.
#define LS_INSTANTIATE_CAST_FROM(From)                                           \
  template cudaError_t LaunchCast(const From*, float*, int64_t, cudaStream_t);   \
  template cudaError_t LaunchCast(const From*, double*, int64_t, cudaStream_t);  \
  template cudaError_t LaunchCast(const From*, int32_t*, int64_t, cudaStream_t); \
  template cudaError_t LaunchCast(const From*, int64_t*, int64_t, cudaStream_t); \
  template cudaError_t LaunchCast(const From*, __half*, int64_t, cudaStream_t);  \
  template cudaError_t LaunchCast(const From*, __nv_bfloat16*, int64_t, cudaStream_t)
LS_INSTANTIATE_CAST_FROM(float);
LS_INSTANTIATE_CAST_FROM(double);
LS_INSTANTIATE_CAST_FROM(int32_t);
LS_INSTANTIATE_CAST_FROM(int64_t);
LS_INSTANTIATE_CAST_FROM(__half);
LS_INSTANTIATE_CAST_FROM(__nv_bfloat16);
#undef LS_INSTANTIATE_CAST_FROM

}  // namespace lockstep::cuda
