#pragma once

// Device code of a bucket's conversions into and out of its wire dtype (wire_bucket.h): f32 to
// bf16/f16, rounding to nearest even, and back. Enqueued on `stream`.

#include <cuda_runtime.h>

#include <cstdint>

#include "core/dtype.h"

namespace lockstep::parallel::cuda {

// `n` elements of `from_dtype` at `from` into `to_dtype` at `to`; cudaErrorInvalidValue for a
// pair other than f32 <-> bf16/f16.
cudaError_t LaunchConvert(const void* from, DType from_dtype, void* to, DType to_dtype, int64_t n,
                          cudaStream_t stream);

}  // namespace lockstep::parallel::cuda
