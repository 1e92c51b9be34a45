#pragma once

// The CUDA backend's NormalizeImages (core/backend.h; ops/cuda/image_input.cu): uint8
// (N, H, W, C) device images into float32 (N, C, H, W), with the per-element math of
// ops/image_input_math.h.

#include <cuda_runtime.h>

#include <cstdint>

#include "ops/image_input_math.h"

namespace lockstep::cuda {

// `plane` = H * W; `total` = N * C * H * W output elements.
cudaError_t LaunchNormalizeImages(const uint8_t* nhwc, float* nchw, int64_t total, int64_t plane,
                                  const math::ImageNormalization& n, cudaStream_t stream);

}  // namespace lockstep::cuda
