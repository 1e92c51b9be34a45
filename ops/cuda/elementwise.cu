// Element-wise CUDA kernels: one grid-stride loop each over functors that hold the pointers,
// over packs of 8 bytes where the pointers allow; the per-element math is in
// ops/elementwise_math.h, in float for every element type (16-bit values are loaded to float and
// rounded back when stored).

#include <type_traits>
#include <utility>

#include "ops/cuda/device_util.cuh"
#include "ops/cuda/element_type.cuh"
#include "ops/cuda/elementwise_kernels.h"
#include "ops/elementwise_math.h"

namespace lockstep::cuda {
namespace {

// y[i] = op(x0[i], x1[i], ...) in float, a pack of V elements at a time (ForEachPack): every
// element-wise op but the casts and the bias, whose operands differ in type or length.
template <typename T, typename Op, int kInputs>
struct MapFn {
  Op op;
  const T* x[kInputs > 0 ? kInputs : 1];  // (n) each
  T* y;                                   // (n)

  template <int V>
  bool Fits() const {
    bool fits = PacksFit<V>(y);
    for (int j = 0; j < kInputs; ++j) fits = fits && PacksFit<V>(x[j]);
    return fits;
  }

  template <int V>
  __device__ void Apply(int64_t i) const {
    Pack<T, V> in[kInputs > 0 ? kInputs : 1];
    for (int j = 0; j < kInputs; ++j) in[j] = LoadPack<V>(x[j], i);
    Pack<T, V> out;
    for (int k = 0; k < V; ++k) {
      out.at[k] = FromF32<T>(Call(in, k, std::make_index_sequence<kInputs>{}));
    }
    StorePack<V>(y, i, out);
  }

  template <int V, size_t... J>
  __device__ float Call(const Pack<T, V>* in, int k, std::index_sequence<J...>) const {
    return op(ToF32(in[J].at[k])...);
  }
};

template <typename T, typename Op, typename... In>
cudaError_t Map(int64_t n, cudaStream_t stream, Op op, T* y, const In*... x) {
  return ForEachPack<T>(n, stream, MapFn<T, Op, sizeof...(In)>{op, {x...}, y});
}

struct AddOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct AddReluOp {
  __device__ float operator()(float a, float b) const { return math::AddRelu(a, b); }
};
struct ReluOp {
  __device__ float operator()(float x) const { return math::Relu(x); }
};
struct ReluGradOp {
  __device__ float operator()(float x, float dy) const { return math::ReluGrad(x, dy); }
};
struct AddReluGradOp {
  __device__ float operator()(float x, float dy1, float dy2) const {
    return math::AddReluGrad(x, dy1, dy2);
  }
};
struct ScaleOp {
  float scale;
  __device__ float operator()(float x) const { return scale * x; }
};
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
cudaError_t LaunchAdd(const T* a, const T* b, T* y, int64_t n, cudaStream_t stream) {
  return Map(n, stream, AddOp{}, y, a, b);
}

template <typename T>
cudaError_t LaunchAddRelu(const T* a, const T* b, T* y, int64_t n, cudaStream_t stream) {
  return Map(n, stream, AddReluOp{}, y, a, b);
}

template <typename T>
cudaError_t LaunchRelu(const T* x, T* y, int64_t n, cudaStream_t stream) {
  return Map(n, stream, ReluOp{}, y, x);
}

template <typename T>
cudaError_t LaunchReluGrad(const T* x, const T* dy, T* dx, int64_t n, cudaStream_t stream) {
  return Map(n, stream, ReluGradOp{}, dx, x, dy);
}

template <typename T>
cudaError_t LaunchAddReluGrad(const T* x, const T* dy1, const T* dy2, T* dx, int64_t n,
                              cudaStream_t stream) {
  return Map(n, stream, AddReluGradOp{}, dx, x, dy1, dy2);
}

template <typename T>
cudaError_t LaunchScale(const T* x, float scale, T* y, int64_t n, cudaStream_t stream) {
  return Map(n, stream, ScaleOp{scale}, y, x);
}

template <typename T>
cudaError_t LaunchFill(T* y, float value, int64_t n, cudaStream_t stream) {
  return Map(n, stream, ConstantOp{value}, y);
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

#define LS_INSTANTIATE_ELEMENTWISE(T)                                                              \
  template cudaError_t LaunchAdd(const T*, const T*, T*, int64_t, cudaStream_t);                   \
  template cudaError_t LaunchAddRelu(const T*, const T*, T*, int64_t, cudaStream_t);               \
  template cudaError_t LaunchRelu(const T*, T*, int64_t, cudaStream_t);                            \
  template cudaError_t LaunchReluGrad(const T*, const T*, T*, int64_t, cudaStream_t);              \
  template cudaError_t LaunchAddReluGrad(const T*, const T*, const T*, T*, int64_t, cudaStream_t); \
  template cudaError_t LaunchScale(const T*, float, T*, int64_t, cudaStream_t);                    \
  template cudaError_t LaunchFill(T*, float, int64_t, cudaStream_t);                               \
  template cudaError_t LaunchBiasAdd(const T*, const T*, T*, int64_t, int64_t, int64_t,            \
                                     cudaStream_t);                                                \
  template cudaError_t LaunchBiasAddGrad(const T*, T*, int64_t, int64_t, int64_t, cudaStream_t)
LS_FOR_EACH_FLOAT_ELEMENT(LS_INSTANTIATE_ELEMENTWISE);
#undef LS_INSTANTIATE_ELEMENTWISE

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
