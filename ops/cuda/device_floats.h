#pragma once

// The element types of the CUDA kernels that compute in float: float, and the 16-bit types
// (__half, __nv_bfloat16) whose values they load and store through float. Kernel classes
// template on the device type; DeviceFloats maps the graph's dtypes to it.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/tensor.h"
#include "graph/kernel.h"

namespace lockstep::cuda {

// For RegisterFloatKernels (graph/kernel.h).
using DeviceFloats = FloatElements<float, __nv_bfloat16, __half>;

// A tensor's device memory as T, whatever its dtype says (the kernel was chosen by dtype).
template <typename T>
T* DataAs(const Tensor& tensor) {
  return static_cast<T*>(tensor.raw_data());
}

}  // namespace lockstep::cuda
