#pragma once

// The element types of the CUDA kernels that compute in float: float, and the 16-bit types
// (__half, __nv_bfloat16) whose values they load and store through float. Kernel classes
// template on the device type; DeviceElement maps the graph's dtype to it.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/dtype.h"
#include "core/tensor.h"

namespace lockstep::cuda {

template <DType kDType>
struct DeviceElement;
template <>
struct DeviceElement<DType::kF32> {
  using type = float;
};
template <>
struct DeviceElement<DType::kF16> {
  using type = __half;
};
template <>
struct DeviceElement<DType::kBF16> {
  using type = __nv_bfloat16;
};

// The floating dtypes the element-wise, pooling and normalization kernels are registered for.
inline constexpr DType kFloatDTypes[] = {DType::kF32, DType::kBF16, DType::kF16};

// A tensor's device memory as T, whatever its dtype says (the kernel was chosen by dtype).
template <typename T>
T* DataAs(const Tensor& tensor) {
  return static_cast<T*>(tensor.raw_data());
}

}  // namespace lockstep::cuda
