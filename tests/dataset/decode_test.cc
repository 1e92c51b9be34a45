#include "dataset/decode.h"

#include <gtest/gtest.h>
#include <turbojpeg.h>

#include <cmath>
#include <cstdlib>
#include <memory>

#include "dataset/encode.h"
#include "tests/dataset/test_util.h"

namespace lockstep::dataset {
namespace {

using testing::GradientImage;

struct Difference {
  double mean = 0;
  int max = 0;
};

Difference Compare(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  Difference d;
  const uint8_t* pa = a.data<uint8_t>();
  const uint8_t* pb = b.data<uint8_t>();
  for (int64_t i = 0; i < a.numel(); ++i) {
    int diff = std::abs(pa[i] - pb[i]);
    d.mean += diff;
    d.max = std::max(d.max, diff);
  }
  d.mean /= a.numel();
  return d;
}

std::vector<uint8_t> Jpeg(const Tensor& image, int quality = 95) {
  absl::StatusOr<std::vector<uint8_t>> bytes =
      EncodeJpeg(image, {.quality = quality, .subsample_chroma = false});
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return *bytes;
}

Tensor DecodeOk(const std::vector<uint8_t>& bytes, double max_shrink = 1.0) {
  absl::StatusOr<Tensor> image = DecodeImage(bytes, max_shrink);
  EXPECT_TRUE(image.ok()) << image.status();
  return image.ok() ? *image : Tensor();
}

// Averages factor x factor blocks: what a DCT-scaled decode approximates.
Tensor BoxDownscale(const Tensor& image, int factor) {
  int64_t h = image.dim(0) / factor, w = image.dim(1) / factor, c = image.dim(2);
  Tensor out = Tensor::Empty({h, w, c}, DType::kU8);
  const uint8_t* in = image.data<uint8_t>();
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      for (int64_t k = 0; k < c; ++k) {
        int sum = 0;
        for (int dy = 0; dy < factor; ++dy) {
          for (int dx = 0; dx < factor; ++dx) {
            sum += in[((y * factor + dy) * image.dim(1) + x * factor + dx) * c + k];
          }
        }
        out.data<uint8_t>()[(y * w + x) * c + k] = static_cast<uint8_t>(sum / (factor * factor));
      }
    }
  }
  return out;
}

TEST(DatasetDecodeTest, JpegMatchesTheEncodedPixelsWithinJpegTolerance) {
  Tensor reference = GradientImage(48, 64);
  std::vector<uint8_t> bytes = Jpeg(reference);
  Difference d = Compare(DecodeOk(bytes), reference);
  EXPECT_LT(d.mean, 1.5);
  EXPECT_LE(d.max, 12);

  absl::StatusOr<ImageInfo> info = ReadImageInfo(bytes);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->format, ImageFormat::kJpeg);
  EXPECT_EQ(info->height, 48);
  EXPECT_EQ(info->width, 64);
}

TEST(DatasetDecodeTest, GreyscaleJpegBecomesRgb) {
  Tensor grey = GradientImage(32, 40, 1);
  Tensor rgb = DecodeOk(Jpeg(grey));
  ASSERT_EQ(rgb.shape(), (Shape{32, 40, 3}));
  const uint8_t* p = rgb.data<uint8_t>();
  for (int64_t i = 0; i < 32 * 40; ++i) {
    EXPECT_EQ(p[3 * i], p[3 * i + 1]);
    EXPECT_EQ(p[3 * i], p[3 * i + 2]);
    EXPECT_LE(std::abs(p[3 * i] - grey.data<uint8_t>()[i]), 6);
  }
}

TEST(DatasetDecodeTest, CmykJpegBecomesRgb) {
  // Adobe (inverted) CMYK as libjpeg-turbo writes it: C=200, M=100, Y=50, K=255 is RGB 200,100,50.
  constexpr int kSize = 16;
  std::vector<uint8_t> cmyk(kSize * kSize * 4);
  for (int i = 0; i < kSize * kSize; ++i) {
    cmyk[4 * i] = 200;
    cmyk[4 * i + 1] = 100;
    cmyk[4 * i + 2] = 50;
    cmyk[4 * i + 3] = 255;
  }
  std::unique_ptr<void, int (*)(tjhandle)> handle(tjInitCompress(), tjDestroy);
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  ASSERT_EQ(tjCompress2(handle.get(), cmyk.data(), kSize, 0, kSize, TJPF_CMYK, &jpeg, &size,
                        TJSAMP_444, 100, 0),
            0)
      << tjGetErrorStr2(handle.get());
  std::vector<uint8_t> bytes(jpeg, jpeg + size);
  tjFree(jpeg);
  Tensor rgb = DecodeOk(bytes);
  ASSERT_EQ(rgb.shape(), (Shape{kSize, kSize, 3}));
  const uint8_t* p = rgb.data<uint8_t>();
  for (int i = 0; i < kSize * kSize; ++i) {
    EXPECT_NEAR(p[3 * i], 200, 3);
    EXPECT_NEAR(p[3 * i + 1], 100, 3);
    EXPECT_NEAR(p[3 * i + 2], 50, 3);
  }
}

TEST(DatasetDecodeTest, PngDecodesExactly) {
  Tensor rgb = GradientImage(20, 30, 3, 5);
  absl::StatusOr<std::vector<uint8_t>> png = EncodePng(rgb);
  ASSERT_TRUE(png.ok());
  EXPECT_EQ(Compare(DecodeOk(*png), rgb).max, 0);

  Tensor grey = GradientImage(20, 30, 1);
  Tensor decoded = DecodeOk(*EncodePng(grey));
  ASSERT_EQ(decoded.shape(), (Shape{20, 30, 3}));
  for (int64_t i = 0; i < 20 * 30; ++i) {
    for (int c = 0; c < 3; ++c)
      EXPECT_EQ(decoded.data<uint8_t>()[3 * i + c], grey.data<uint8_t>()[i]);
  }

  // Opaque RGBA keeps its colours exactly.
  Tensor rgba = GradientImage(20, 30, 4);
  for (int64_t i = 0; i < 20 * 30; ++i) rgba.data<uint8_t>()[4 * i + 3] = 255;
  decoded = DecodeOk(*EncodePng(rgba));
  for (int64_t i = 0; i < 20 * 30; ++i) {
    for (int c = 0; c < 3; ++c) {
      EXPECT_EQ(decoded.data<uint8_t>()[3 * i + c], rgba.data<uint8_t>()[4 * i + c]);
    }
  }
}

TEST(DatasetDecodeTest, DctScalingShrinksOnlyWhenAtLeastHalf) {
  Tensor reference = GradientImage(64, 96);
  std::vector<uint8_t> bytes = Jpeg(reference, 98);
  EXPECT_EQ(DecodeOk(bytes, 1.9).shape(), (Shape{64, 96, 3}));
  EXPECT_EQ(DecodeOk(bytes, 3.0).shape(), (Shape{32, 48, 3}));  // 1/2: 3/8 is no faster
  EXPECT_EQ(DecodeOk(bytes, 20.0).shape(), (Shape{8, 12, 3}));  // 1/8
  Tensor half = DecodeOk(bytes, 2.0);
  ASSERT_EQ(half.shape(), (Shape{32, 48, 3}));
  EXPECT_LT(Compare(half, BoxDownscale(reference, 2)).mean, 2.0);
  Tensor quarter = DecodeOk(bytes, 4.5);
  ASSERT_EQ(quarter.shape(), (Shape{16, 24, 3}));
  EXPECT_LT(Compare(quarter, BoxDownscale(reference, 4)).mean, 2.5);
}

TEST(DatasetDecodeTest, BadFilesAreDataLoss) {
  std::vector<uint8_t> jpeg = Jpeg(GradientImage(64, 64));
  std::vector<uint8_t> truncated(jpeg.begin(), jpeg.begin() + jpeg.size() / 2);
  std::vector<uint8_t> corrupt = jpeg;
  for (size_t i = 3; i < 40; ++i) corrupt[i] = static_cast<uint8_t>(i * 37);
  std::string text = "this is not an image, only text\n";
  std::vector<uint8_t> png = *EncodePng(GradientImage(16, 16));
  std::vector<uint8_t> truncated_png(png.begin(), png.begin() + png.size() / 2);

  for (const std::vector<uint8_t>& bytes :
       {truncated, corrupt, std::vector<uint8_t>(), std::vector<uint8_t>(text.begin(), text.end()),
        truncated_png}) {
    absl::StatusOr<Tensor> image = DecodeImage(bytes);
    EXPECT_TRUE(IsBadImage(image.status())) << image.status();
    // A failure leaves this thread's decoder usable.
    EXPECT_TRUE(DecodeImage(jpeg).ok());
  }
  EXPECT_NE(DecodeImage({}).status().message().find("empty file"), std::string_view::npos);
  EXPECT_NE(DecodeImage(std::vector<uint8_t>(text.begin(), text.end()))
                .status()
                .message()
                .find("not a JPEG or PNG"),
            std::string_view::npos);
}

}  // namespace
}  // namespace lockstep::dataset
