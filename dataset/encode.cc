#include "dataset/encode.h"

#include <png.h>
#include <turbojpeg.h>

#include <algorithm>
#include <cstring>
#include <memory>

namespace lockstep::dataset {
namespace {

absl::Status CheckImage(const Tensor& image, std::initializer_list<int64_t> channels) {
  bool ok = image.defined() && image.dtype() == DType::kU8 && image.rank() == 3 &&
            std::find(channels.begin(), channels.end(), image.dim(2)) != channels.end();
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat("cannot encode a ", DTypeName(image.dtype()),
                                                   " tensor of shape ",
                                                   ShapeToString(image.shape())));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<uint8_t>> EncodeJpeg(const Tensor& image,
                                                const JpegEncodeOptions& options) {
  LS_RETURN_IF_ERROR(CheckImage(image, {1, 3}));
  std::unique_ptr<void, int (*)(tjhandle)> handle(tjInitCompress(), tjDestroy);
  if (handle == nullptr) return absl::ResourceExhaustedError("tjInitCompress failed");
  bool grey = image.dim(2) == 1;
  int subsampling = grey ? TJSAMP_GRAY : (options.subsample_chroma ? TJSAMP_420 : TJSAMP_444);
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  int rc = tjCompress2(handle.get(), image.data<uint8_t>(), static_cast<int>(image.dim(1)), 0,
                       static_cast<int>(image.dim(0)), grey ? TJPF_GRAY : TJPF_RGB, &jpeg, &size,
                       subsampling, options.quality, 0);
  std::unique_ptr<unsigned char, void (*)(unsigned char*)> owned(jpeg, tjFree);
  if (rc != 0) {
    return absl::InternalError(absl::StrCat("tjCompress2: ", tjGetErrorStr2(handle.get())));
  }
  return std::vector<uint8_t>(jpeg, jpeg + size);
}

absl::StatusOr<std::vector<uint8_t>> EncodePng(const Tensor& image) {
  LS_RETURN_IF_ERROR(CheckImage(image, {1, 3, 4}));
  png_image png;
  std::memset(&png, 0, sizeof(png));
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(image.dim(1));
  png.height = static_cast<png_uint_32>(image.dim(0));
  png.format =
      image.dim(2) == 1 ? PNG_FORMAT_GRAY : (image.dim(2) == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_RGBA);
  png_alloc_size_t size = 0;
  // The first call measures, the second writes.
  if (!png_image_write_to_memory(&png, nullptr, &size, 0, image.data<uint8_t>(), 0, nullptr)) {
    return absl::InternalError(absl::StrCat("png_image_write_to_memory: ", png.message));
  }
  std::vector<uint8_t> bytes(size);
  if (!png_image_write_to_memory(&png, bytes.data(), &size, 0, image.data<uint8_t>(), 0, nullptr)) {
    return absl::InternalError(absl::StrCat("png_image_write_to_memory: ", png.message));
  }
  bytes.resize(size);
  return bytes;
}

}  // namespace lockstep::dataset
