// libFuzzer target of JPEG and PNG decoding (libjpeg-turbo, libpng), through the entry points the
// ImageFolder pipeline uses, in memory: the header, a full decode and a DCT-scaled one. A file
// that does not decode must be a bad file (kDataLoss), which the pipeline skips, never a failure
// of the program; one that decodes has the header's size.

#include <cstddef>
#include <cstdint>

#include "core/logging.h"
#include "dataset/decode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  const absl::Span<const uint8_t> bytes(data, size);
  absl::StatusOr<dataset::ImageInfo> info = dataset::ReadImageInfo(bytes);
  for (double max_shrink : {1.0, 8.0}) {
    absl::StatusOr<Tensor> image = dataset::DecodeImage(bytes, max_shrink);
    if (!image.ok()) {
      LS_CHECK(dataset::IsBadImage(image.status())) << image.status();
      continue;
    }
    LS_CHECK(info.ok()) << "decoded, but the header read failed: " << info.status();
    LS_CHECK(image->dim(2) == 3) << ShapeToString(image->shape());
    if (max_shrink == 1.0) {
      LS_CHECK(image->dim(0) == info->height && image->dim(1) == info->width)
          << ShapeToString(image->shape()) << " against the header's " << info->height << "x"
          << info->width;
    }
  }
  return 0;
}
