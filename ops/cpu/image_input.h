#pragma once

// The CPU backend's NormalizeImages (core/backend.h): uint8 (N, H, W, C) host images into float32
// (N, C, H, W), with the per-element math of ops/image_input_math.h.

#include <vector>

#include "core/tensor.h"

namespace lockstep::cpu {

// The arguments are checked (CheckNormalizeImages).
void NormalizeImagesOnHost(const Tensor& images, const Tensor& to, const std::vector<float>& mean,
                           const std::vector<float>& std);

}  // namespace lockstep::cpu
