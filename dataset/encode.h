#pragma once

// Image writing, for the sample data set, the benchmark's image set and tests: JPEG through
// TurboJPEG's tjCompress2, PNG through libpng.

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "core/status.h"
#include "core/tensor.h"

namespace lockstep::dataset {

struct JpegEncodeOptions {
  int quality = 90;
  // 4:2:0 chroma subsampling (what PIL and cameras write); false keeps full-resolution chroma.
  bool subsample_chroma = true;
};

// (H, W, C) uint8 with C = 1 (greyscale) or 3 (RGB).
absl::StatusOr<std::vector<uint8_t>> EncodeJpeg(const Tensor& image,
                                                const JpegEncodeOptions& options = {});
// (H, W, C) uint8 with C = 1 (grey), 3 (RGB) or 4 (RGBA).
absl::StatusOr<std::vector<uint8_t>> EncodePng(const Tensor& image);

}  // namespace lockstep::dataset
