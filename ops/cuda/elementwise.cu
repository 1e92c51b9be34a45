// Element-wise CUDA kernels: one grid-stride loop each over functors that hold the pointers;
// the per-element math is in ops/elementwise_math.h, in float for every element type (16-bit
// values are loaded to float and rounded back when stored).

#include <type_traits>

#include "ops/cuda/device_util.cuh"
#include "ops/cuda/element_type.cuh"
#include "ops/cuda/elementwise_kernels.h"
#include "ops/elementwise_math.h"

namespace lockstep::cuda {
namespace {

template <typename T>
struct AddFn {
  const T* a;  // (n)
  const T* b;  // (n)
  T* y;        // (n)
  __device__ void operator()(int64_t i) const { y[i] = FromF32<T>(ToF32(a[i]) + ToF32(b[i])); }
};

template <typename T>
struct AddReluFn {
  const T* a;  // (n)
  const T* b;  // (n)
  T* y;        // (n)
  __device__ void operator()(int64_t i) const {
    y[i] = FromF32<T>(math::AddRelu(ToF32(a[i]), ToF32(b[i])));
  }
};

template <typename T>
struct ReluFn {
  const T* x;  // (n)
  T* y;        // (n)
  __device__ void operator()(int64_t i) const { y[i] = FromF32<T>(math::Relu(ToF32(x[i]))); }
};

template <typename T>
struct ReluGradFn {
  const T* x;   // (n)
  const T* dy;  // (n)
  T* dx;        // (n)
  __device__ void operator()(int64_t i) const {
    dx[i] = FromF32<T>(math::ReluGrad(ToF32(x[i]), ToF32(dy[i])));
  }
};

template <typename T>
struct AddReluGradFn {
  const T* x;    // (n)
  const T* dy1;  // (n)
  const T* dy2;  // (n)
  T* dx;         // (n)
  __device__ void operator()(int64_t i) const {
    dx[i] = FromF32<T>(math::AddReluGrad(ToF32(x[i]), ToF32(dy1[i]), ToF32(dy2[i])));
  }
};

template <typename T>
struct ScaleFn {
  const T* x;  // (n)
  float scale;
  T* y;  // (n)
  __device__ void operator()(int64_t i) const { y[i] = FromF32<T>(scale * ToF32(x[i])); }
};

template <typename T>
struct FillFn {
  T* y;  // (n)
  float value;
  __device__ void operator()(int64_t i) const { y[i] = FromF32<T>(value); }
};

// Through float where either side is 16-bit (the conversions cuda_fp16.h and cuda_bf16.h
// define), directly otherwise, so double -> int64 keeps its precision.
template <typename From, typename To>
struct CastFn {
  const From* x;  // (n)
  To* y;          // (n)
  __device__ void operator()(int64_t i) const {
    if constexpr (kIsHalf<From> || kIsHalf<To>) {
      if constexpr (kIsHalf<To>) {
        y[i] = FromF32<To>(ToF32(x[i]));
      } else {
        y[i] = static_cast<To>(ToF32(x[i]));
      }
    } else {
      y[i] = static_cast<To>(x[i]);
    }
  }
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
  return ForEachIndex(n, stream, AddFn<T>{a, b, y});
}

template <typename T>
cudaError_t LaunchAddRelu(const T* a, const T* b, T* y, int64_t n, cudaStream_t stream) {
  return ForEachIndex(n, stream, AddReluFn<T>{a, b, y});
}

template <typename T>
cudaError_t LaunchRelu(const T* x, T* y, int64_t n, cudaStream_t stream) {
  return ForEachIndex(n, stream, ReluFn<T>{x, y});
}

template <typename T>
cudaError_t LaunchReluGrad(const T* x, const T* dy, T* dx, int64_t n, cudaStream_t stream) {
  return ForEachIndex(n, stream, ReluGradFn<T>{x, dy, dx});
}

template <typename T>
cudaError_t LaunchAddReluGrad(const T* x, const T* dy1, const T* dy2, T* dx, int64_t n,
                              cudaStream_t stream) {
  return ForEachIndex(n, stream, AddReluGradFn<T>{x, dy1, dy2, dx});
}

template <typename T>
cudaError_t LaunchScale(const T* x, float scale, T* y, int64_t n, cudaStream_t stream) {
  return ForEachIndex(n, stream, ScaleFn<T>{x, scale, y});
}

template <typename T>
cudaError_t LaunchFill(T* y, float value, int64_t n, cudaStream_t stream) {
  return ForEachIndex(n, stream, FillFn<T>{y, value});
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
