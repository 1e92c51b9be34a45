#pragma once

// The per-sample transforms, as MindSpore's vision transforms. Images are (H, W, C) uint8 or
// float32 until HWC2CHW. Random ones draw from the sample's counter-based stream (transform.h).

#include <cstdint>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "dataset/transform.h"

namespace lockstep::dataset {

// Encoded JPEG or PNG bytes (1-D uint8) -> (H, W, 3) uint8 RGB. When the next transform shrinks
// the image at least twofold, a JPEG is decoded at a reduced DCT scale.
TransformPtr Decode();

// Bilinear. Resize(size) scales the shorter side to `size`, keeping the aspect ratio.
TransformPtr Resize(int64_t size);
TransformPtr Resize(int64_t height, int64_t width);

// A random size x size crop of the image padded by `padding` zeros on every side.
TransformPtr RandomCrop(int64_t size, int64_t padding = 0);

// torchvision's RandomResizedCrop: a random box of scale x the area and aspect ratio in `ratio`
// (10 tries, then a central crop), resized to size x size.
TransformPtr RandomResizedCrop(int64_t size, std::pair<float, float> scale = {0.08f, 1.0f},
                               std::pair<float, float> ratio = {3.0f / 4.0f, 4.0f / 3.0f});

// The central size x size pixels, zero-padded when the image is smaller.
TransformPtr CenterCrop(int64_t size);

TransformPtr RandomHorizontalFlip(float probability = 0.5f);

// (x - mean[c]) / std[c] -> float32, in the input's units (MindSpore's convention: for uint8
// images, mean and std are on the 0..255 scale). One value broadcasts to every channel.
TransformPtr Normalize(std::vector<float> mean, std::vector<float> std);

// (H, W, C) -> (C, H, W).
TransformPtr HWC2CHW();

// Element type conversion among uint8, int32, float32 and float64 (image_ops.h's rules).
TransformPtr TypeCast(DType dtype);

}  // namespace lockstep::dataset
