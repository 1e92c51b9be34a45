#pragma once

// Pixel kernels behind the transforms, on (H, W, C) images. The transforms validate shapes and
// dtypes before calling these; the kernels only check invariants.

#include <cstdint>

#include "absl/types/span.h"
#include "core/tensor.h"

namespace lockstep::dataset {

// A rectangle of an image in pixels; it may reach outside the image (the outside reads as zero).
struct CropBox {
  int64_t top = 0;
  int64_t left = 0;
  int64_t height = 0;
  int64_t width = 0;
};

// Bilinear resize of `box` (inside the image) to (out_height, out_width, C), with half-pixel
// centres as OpenCV's INTER_LINEAR and MindSpore's Resize. uint8 (rounded) or float32, kept.
Tensor ResizeBilinear(const Tensor& image, const CropBox& box, int64_t out_height,
                      int64_t out_width);  // (H, W, C) -> (out_height, out_width, C)

// The pixels of `box`, zero where it reaches outside the image. Any dtype.
Tensor Crop(const Tensor& image, const CropBox& box);  // (H, W, C) -> (box.height, box.width, C)

// Mirrors left and right. Any dtype.
Tensor FlipHorizontal(const Tensor& image);  // (H, W, C) -> (H, W, C)

// (x - mean[c]) / std[c] in float32; uint8 or float32 input; mean and std hold C values.
Tensor NormalizeChannels(const Tensor& image, absl::Span<const float> mean,
                         absl::Span<const float> std);  // (H, W, C) -> (H, W, C) f32

// Any dtype.
Tensor HwcToChw(const Tensor& image);  // (H, W, C) -> (C, H, W)

// Casts between uint8, int32, float32 and float64: integers from floats are rounded to nearest,
// and every integer result saturates at its type's range.
bool IsCastSupported(DType dtype);
Tensor CastTo(const Tensor& tensor, DType dtype);

}  // namespace lockstep::dataset
