#pragma once

// Loads and stores of the CUDA kernels' element types through float, where they compute (the
// shared math of ops/*_math.h is float). Stores round to nearest even (cuda_bf16.h and
// cuda_fp16.h's _rn conversions), as core/half.h does on the host. Include from .cu files only.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace lockstep::cuda {

__device__ inline float ToF32(float x) { return x; }
__device__ inline float ToF32(__half x) { return __half2float(x); }
__device__ inline float ToF32(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T>
__device__ T FromF32(float x);
template <>
__device__ inline float FromF32<float>(float x) {
  return x;
}
template <>
__device__ inline __half FromF32<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ inline __nv_bfloat16 FromF32<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

template <typename T>
inline constexpr bool kIsHalf = false;
template <>
inline constexpr bool kIsHalf<__half> = true;
template <>
inline constexpr bool kIsHalf<__nv_bfloat16> = true;

// x as To: through float where either side is 16-bit (the conversions cuda_fp16.h and
// cuda_bf16.h define), directly otherwise, so double -> int64 keeps its precision.
template <typename To, typename From>
__device__ inline To Converted(From x) {
  if constexpr (kIsHalf<To>) {
    return FromF32<To>(ToF32(x));
  } else if constexpr (kIsHalf<From>) {
    return static_cast<To>(ToF32(x));
  } else {
    return static_cast<To>(x);
  }
}

}  // namespace lockstep::cuda

// Explicit instantiations of a launcher template for each element type.
#define LS_FOR_EACH_FLOAT_ELEMENT(X) \
  X(float);                          \
  X(__half);                         \
  X(__nv_bfloat16)
