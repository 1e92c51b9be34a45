#pragma once

// JPEG (libjpeg-turbo's TurboJPEG API) and PNG (libpng) decoding into (H, W, 3) uint8 RGB tensors.
// A file that is not a valid image (corrupt, truncated, empty, another format) gives
// absl::StatusCode::kDataLoss, which the pipeline treats as a bad file.

#include <cstdint>

#include "absl/types/span.h"
#include "core/status.h"
#include "core/tensor.h"

namespace lockstep::dataset {

enum class ImageFormat { kJpeg, kPng };

struct ImageInfo {
  ImageFormat format;
  int height;
  int width;
};

// Reads only the header.
absl::StatusOr<ImageInfo> ReadImageInfo(absl::Span<const uint8_t> bytes);

// Decodes to (H, W, 3) uint8 RGB; greyscale and CMYK JPEGs, and grey, palette or alpha PNGs, become
// RGB. When max_shrink >= 2, a JPEG is decoded up to max_shrink times smaller per side by
// DCT-domain scaling (by 1/2, 1/4 or 1/8), which skips most of the inverse DCT and colour
// conversion work.
absl::StatusOr<Tensor> DecodeImage(absl::Span<const uint8_t> bytes, double max_shrink = 1.0);

// True when a status from this file is a bad file rather than a failure of the program.
inline bool IsBadImage(const absl::Status& status) { return absl::IsDataLoss(status); }

}  // namespace lockstep::dataset
