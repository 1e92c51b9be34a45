#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "ops/cuda/device_loops.cuh"
#include "parallel/ops/cuda/wire_convert.h"

namespace lockstep::parallel::cuda {
namespace {

__device__ float ToF32(float x) { return x; }
__device__ float ToF32(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ float ToF32(__half x) { return __half2float(x); }

template <typename T>
__device__ T FromF32(float x);
template <>
__device__ float FromF32<float>(float x) {
  return x;
}
template <>
__device__ __nv_bfloat16 FromF32<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <>
__device__ __half FromF32<__half>(float x) {
  return __float2half_rn(x);
}

template <typename From, typename To>
struct Convert {
  const From* from;  // (n)
  To* to;            // (n)
  __device__ void operator()(int64_t i) const { to[i] = FromF32<To>(ToF32(from[i])); }
};

template <typename From, typename To>
cudaError_t Launch(const void* from, void* to, int64_t n, cudaStream_t stream) {
  return ::lockstep::cuda::ForEachIndex(
      n, stream, Convert<From, To>{static_cast<const From*>(from), static_cast<To*>(to)});
}

}  // namespace

cudaError_t LaunchConvert(const void* from, DType from_dtype, void* to, DType to_dtype, int64_t n,
                          cudaStream_t stream) {
  if (from_dtype == DType::kF32 && to_dtype == DType::kBF16) {
    return Launch<float, __nv_bfloat16>(from, to, n, stream);
  }
  if (from_dtype == DType::kF32 && to_dtype == DType::kF16) {
    return Launch<float, __half>(from, to, n, stream);
  }
  if (from_dtype == DType::kBF16 && to_dtype == DType::kF32) {
    return Launch<__nv_bfloat16, float>(from, to, n, stream);
  }
  if (from_dtype == DType::kF16 && to_dtype == DType::kF32) {
    return Launch<__half, float>(from, to, n, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace lockstep::parallel::cuda
