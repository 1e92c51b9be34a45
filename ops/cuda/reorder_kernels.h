#pragma once

// The device permutation of the CUDA Reorder kernel (ops/cuda/reorder.cu): a 4-D value between
// plain (N, C, H, W) and NHWC (N, H, W, C) storage.

#include <cuda_runtime.h>

#include <array>
#include <cstddef>
#include <cstdint>

namespace lockstep::cuda {

// dims: the logical (N, C, H, W); element_bytes 1, 2, 4 or 8 (else cudaErrorInvalidValue).
cudaError_t LaunchNhwcPermute(const void* from, void* to, const std::array<int64_t, 4>& dims,
                              size_t element_bytes, bool to_nhwc, cudaStream_t stream);

// The permutation converting each element from From to To, through float (float_conversions.cuh):
// the CUDA Cast between a value and its copy in another layout. From and To are float, __half or
// __nv_bfloat16.
template <typename From, typename To>
cudaError_t LaunchCastNhwcPermute(const From* from, To* to, const std::array<int64_t, 4>& dims,
                                  bool to_nhwc, cudaStream_t stream);

}  // namespace lockstep::cuda
