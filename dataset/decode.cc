#include "dataset/decode.h"

#include <png.h>
#include <turbojpeg.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "absl/strings/escaping.h"
#include "absl/strings/string_view.h"
#include "core/host_memory.h"

namespace lockstep::dataset {
namespace {

// Refused before allocating: a corrupt header can claim 65500 x 65500 pixels.
constexpr int64_t kMaxPixels = int64_t{1} << 28;

struct TjDestroyer {
  void operator()(void* handle) const { tjDestroy(handle); }
};

// One decompressor per thread, kept: creating one costs about as much as decoding a small image.
std::unique_ptr<void, TjDestroyer>& ThreadDecompressor() {
  thread_local std::unique_ptr<void, TjDestroyer> handle;
  return handle;
}

absl::StatusOr<tjhandle> Decompressor() {
  std::unique_ptr<void, TjDestroyer>& handle = ThreadDecompressor();
  if (handle == nullptr) handle.reset(tjInitDecompress());
  if (handle == nullptr) return absl::ResourceExhaustedError("tjInitDecompress failed");
  return handle.get();
}

// TurboJPEG 2.x can leave a handle mid-stream after an error (the next header read then fails
// with the old error), so a failed handle is replaced.
absl::Status DiscardDecompressor(absl::Status status) {
  ThreadDecompressor().reset();
  return status;
}

bool IsJpeg(absl::Span<const uint8_t> bytes) {
  return bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF;
}

bool IsPng(absl::Span<const uint8_t> bytes) {
  return bytes.size() >= 8 && png_sig_cmp(bytes.data(), 0, 8) == 0;
}

absl::Status NotAnImage(absl::Span<const uint8_t> bytes) {
  if (bytes.empty()) return absl::DataLossError("empty file");
  absl::string_view head(reinterpret_cast<const char*>(bytes.data()),
                         std::min<size_t>(4, bytes.size()));
  return absl::DataLossError(absl::StrCat("not a JPEG or PNG file (", bytes.size(),
                                          " bytes, starting 0x", absl::BytesToHexString(head),
                                          ")"));
}

absl::Status CheckSize(int64_t height, int64_t width) {
  if (height <= 0 || width <= 0 || height * width > kMaxPixels) {
    return absl::DataLossError(absl::StrCat("image size ", width, "x", height, " is out of range"));
  }
  return absl::OkStatus();
}

// Memory for decoded pixels. Sizes past what this process may ever hold are a bad file, as sizes
// past kMaxPixels are; an allocation that fails anyway is an error naming the size.
absl::StatusOr<Tensor> AllocatePixels(int64_t height, int64_t width, int64_t channels) {
  const std::string what =
      absl::StrCat("a ", width, "x", height, " image of ", channels, " channels");
  if (absl::Status fits = CheckHostMemory(height * width * channels, what); !fits.ok()) {
    return absl::DataLossError(fits.message());
  }
  absl::StatusOr<Tensor> pixels =
      Tensor::Allocate({height, width, channels}, DType::kU8, Device::CPU(), /*zeroed=*/false);
  if (!pixels.ok()) return Annotate(pixels.status(), absl::StrCat("decoding ", what));
  return pixels;
}

struct JpegHeader {
  int width = 0;
  int height = 0;
  int colorspace = 0;
};

absl::StatusOr<JpegHeader> ReadJpegHeader(tjhandle handle, absl::Span<const uint8_t> bytes) {
  JpegHeader header;
  int subsampling = 0;
  if (tjDecompressHeader3(handle, bytes.data(), bytes.size(), &header.width, &header.height,
                          &subsampling, &header.colorspace) != 0) {
    return DiscardDecompressor(
        absl::DataLossError(absl::StrCat("corrupt JPEG header: ", tjGetErrorStr2(handle))));
  }
  LS_RETURN_IF_ERROR(CheckSize(header.height, header.width));
  return header;
}

// The smallest of the DCT scaling factors 1/2, 1/4 and 1/8 that keeps each side at least
// 1/max_shrink of the original; 1/1 when there is none. The other factors (3/8, 5/8, ...) have
// no fast inverse DCT in libjpeg-turbo: 3/8 decodes slower than 1/2.
tjscalingfactor PickScale(double max_shrink) {
  tjscalingfactor best = {1, 1};
  int count = 0;
  const tjscalingfactor* factors = tjGetScalingFactors(&count);
  for (int i = 0; i < count; ++i) {
    bool power_of_two = factors[i].num == 1 && (factors[i].denom & (factors[i].denom - 1)) == 0;
    if (power_of_two && factors[i].denom >= 2 && factors[i].denom <= max_shrink &&
        factors[i].denom > best.denom) {
      best = factors[i];
    }
  }
  return best;
}

// TurboJPEG reports damaged entropy data (a truncated file, bad Huffman codes) only as a warning
// and fills the rest with grey: such an image is a bad file. Other warnings (extraneous bytes
// before a marker, odd metadata) are common in real data sets and harmless.
absl::Status CheckDecodeResult(tjhandle handle) {
  absl::string_view message = tjGetErrorStr2(handle);
  bool damaged = message.find("Premature end") != absl::string_view::npos ||
                 (message.find("Corrupt JPEG data") != absl::string_view::npos &&
                  message.find("extraneous bytes") == absl::string_view::npos);
  if (tjGetErrorCode(handle) == TJERR_FATAL || damaged) {
    return DiscardDecompressor(
        absl::DataLossError(absl::StrCat("corrupt or truncated JPEG: ", message)));
  }
  return absl::OkStatus();
}

// Adobe (inverted) CMYK, as libjpeg-turbo writes and reads it: R = C * K / 255.
absl::StatusOr<Tensor> CmykToRgb(const Tensor& cmyk) {  // (H, W, 4) -> (H, W, 3)
  LS_ASSIGN_OR_RETURN(Tensor rgb, AllocatePixels(cmyk.dim(0), cmyk.dim(1), 3));
  const uint8_t* in = cmyk.data<uint8_t>();
  uint8_t* out = rgb.data<uint8_t>();
  int64_t pixels = cmyk.dim(0) * cmyk.dim(1);
  for (int64_t p = 0; p < pixels; ++p, in += 4, out += 3) {
    for (int c = 0; c < 3; ++c) out[c] = static_cast<uint8_t>((in[c] * in[3] + 127) / 255);
  }
  return rgb;
}

absl::StatusOr<Tensor> DecodeJpeg(absl::Span<const uint8_t> bytes, double max_shrink) {
  LS_ASSIGN_OR_RETURN(tjhandle handle, Decompressor());
  LS_ASSIGN_OR_RETURN(JpegHeader header, ReadJpegHeader(handle, bytes));
  tjscalingfactor scale = PickScale(max_shrink);
  int width = TJSCALED(header.width, scale);
  int height = TJSCALED(header.height, scale);
  // TurboJPEG converts CMYK and YCCK only to CMYK pixels.
  bool cmyk = header.colorspace == TJCS_CMYK || header.colorspace == TJCS_YCCK;
  LS_ASSIGN_OR_RETURN(Tensor pixels, AllocatePixels(height, width, cmyk ? 4 : 3));
  if (tjDecompress2(handle, bytes.data(), bytes.size(), pixels.data<uint8_t>(), width, 0, height,
                    cmyk ? TJPF_CMYK : TJPF_RGB, 0) != 0) {
    LS_RETURN_IF_ERROR(CheckDecodeResult(handle));
  }
  if (cmyk) return CmykToRgb(pixels);
  return pixels;
}

// Reads the PNG header into `image`; on success the caller owns it (png_image_free or finish).
absl::Status BeginPng(absl::Span<const uint8_t> bytes, png_image* image) {
  std::memset(image, 0, sizeof(*image));
  image->version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(image, bytes.data(), bytes.size())) {
    return absl::DataLossError(absl::StrCat("corrupt PNG: ", image->message));
  }
  absl::Status size = CheckSize(image->height, image->width);
  if (!size.ok()) png_image_free(image);
  return size;
}

absl::StatusOr<Tensor> DecodePng(absl::Span<const uint8_t> bytes) {
  png_image image;
  LS_RETURN_IF_ERROR(BeginPng(bytes, &image));
  image.format = PNG_FORMAT_RGB;
  absl::StatusOr<Tensor> pixels = AllocatePixels(image.height, image.width, 3);
  if (!pixels.ok()) {
    png_image_free(&image);
    return pixels.status();
  }
  // finish_read frees the image whatever happens.
  if (!png_image_finish_read(&image, nullptr, pixels->data<uint8_t>(), 0, nullptr)) {
    return absl::DataLossError(absl::StrCat("corrupt or truncated PNG: ", image.message));
  }
  return pixels;
}

}  // namespace

absl::StatusOr<ImageInfo> ReadImageInfo(absl::Span<const uint8_t> bytes) {
  if (IsJpeg(bytes)) {
    LS_ASSIGN_OR_RETURN(tjhandle handle, Decompressor());
    LS_ASSIGN_OR_RETURN(JpegHeader header, ReadJpegHeader(handle, bytes));
    return ImageInfo{ImageFormat::kJpeg, header.height, header.width};
  }
  if (IsPng(bytes)) {
    png_image image;
    LS_RETURN_IF_ERROR(BeginPng(bytes, &image));
    png_image_free(&image);
    return ImageInfo{ImageFormat::kPng, static_cast<int>(image.height),
                     static_cast<int>(image.width)};
  }
  return NotAnImage(bytes);
}

absl::StatusOr<Tensor> DecodeImage(absl::Span<const uint8_t> bytes, double max_shrink) {
  if (IsJpeg(bytes)) return DecodeJpeg(bytes, max_shrink);
  if (IsPng(bytes)) return DecodePng(bytes);
  return NotAnImage(bytes);
}

}  // namespace lockstep::dataset
