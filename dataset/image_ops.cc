#include "dataset/image_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/logging.h"
#include "ops/image_input_math.h"

namespace lockstep::dataset {
namespace {

// Calls fn(T{}) with the C++ type of a dtype the kernels handle; false for other dtypes.
template <typename Fn>
bool VisitDType(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kU8:
      fn(uint8_t{});
      return true;
    case DType::kI32:
      fn(int32_t{});
      return true;
    case DType::kF32:
      fn(float{});
      return true;
    case DType::kF64:
      fn(double{});
      return true;
    default:
      return false;
  }
}

// Calls fn(std::integral_constant<int, C>{}) with C = the channel count when it is 1, 3 or 4, so
// that loops over channels unroll at compile time, and C = 0 (count known at run time) otherwise.
template <typename Fn>
void VisitChannels(int64_t channels, Fn&& fn) {
  switch (channels) {
    case 1:
      return fn(std::integral_constant<int, 1>{});
    case 3:
      return fn(std::integral_constant<int, 3>{});
    case 4:
      return fn(std::integral_constant<int, 4>{});
    default:
      return fn(std::integral_constant<int, 0>{});
  }
}

// Per output coordinate: the two source samples around its centre and the second one's weight.
struct LinearTaps {
  std::vector<int64_t> first;
  std::vector<int64_t> second;
  std::vector<float> weight;
};

LinearTaps MakeTaps(int64_t start, int64_t source_length, int64_t out_length) {
  LinearTaps taps;
  double scale = static_cast<double>(source_length) / out_length;
  for (int64_t i = 0; i < out_length; ++i) {
    double x = std::clamp((i + 0.5) * scale - 0.5, 0.0, static_cast<double>(source_length - 1));
    int64_t x0 = static_cast<int64_t>(x);
    taps.first.push_back(start + x0);
    taps.second.push_back(start + std::min(x0 + 1, source_length - 1));
    taps.weight.push_back(static_cast<float>(x - x0));
  }
  return taps;
}

template <typename T>
T FromFloat(float v) {
  if constexpr (std::is_same_v<T, uint8_t>) {
    return static_cast<uint8_t>(std::min(v + 0.5f, 255.0f));
  } else {
    return v;
  }
}

// Vertical pass first, over the box's columns of two source rows (contiguous, so it vectorizes),
// then the horizontal pass on that one float row, then the conversion back (vectorized too).
template <typename T, int kChannels>
void ResizeRows(const Tensor& image, const CropBox& box, Tensor* out) {
  int64_t channels = kChannels > 0 ? kChannels : image.dim(2);
  int64_t row_stride = image.dim(1) * channels;
  int64_t box_values = box.width * channels;
  int64_t out_width = out->dim(1);
  LinearTaps xs = MakeTaps(0, box.width, out_width);
  LinearTaps ys = MakeTaps(box.top, box.height, out->dim(0));
  const T* src = image.data<T>() + box.left * channels;
  T* dst = out->data<T>();
  std::vector<float> blended(box_values), row(out_width * channels);
  for (int64_t y = 0; y < out->dim(0); ++y) {
    const T* upper = src + ys.first[y] * row_stride;
    const T* lower = src + ys.second[y] * row_stride;
    float wy = ys.weight[y];
    for (int64_t i = 0; i < box_values; ++i) {
      float a = static_cast<float>(upper[i]);
      blended[i] = a + wy * (static_cast<float>(lower[i]) - a);
    }
    float* r = row.data();
    for (int64_t x = 0; x < out_width; ++x) {
      const float* a = blended.data() + xs.first[x] * channels;
      const float* b = blended.data() + xs.second[x] * channels;
      float wx = xs.weight[x];
      for (int64_t c = 0; c < channels; ++c) *r++ = a[c] + wx * (b[c] - a[c]);
    }
    for (float v : row) *dst++ = FromFloat<T>(v);
  }
}

template <typename T, int kChannels>
void Flip(const T* src, T* dst, int64_t height, int64_t width, int64_t channels) {
  if constexpr (kChannels > 0) channels = kChannels;
  for (int64_t y = 0; y < height; ++y) {
    const T* in = src + y * width * channels;
    T* out = dst + (y * width + width - 1) * channels;
    for (int64_t x = 0; x < width; ++x, in += channels, out -= channels) {
      for (int64_t c = 0; c < channels; ++c) out[c] = in[c];
    }
  }
}

// Works on the flat (H * W * C) array in blocks of 16 pixels, with the per-channel factors laid
// out to match, so that the loop vectorizes whatever the channel count. The formula is the input
// stage's (ops/image_input_math.h), so a batch normalized on the device matches this bit for bit.
template <typename T>
void Normalize(const T* src, float* dst, int64_t pixels, int64_t channels,
               absl::Span<const float> mean, absl::Span<const float> std) {
  constexpr int64_t kBlockPixels = 16;
  int64_t block = kBlockPixels * channels;
  std::vector<float> scale(block), shift(block);
  for (int64_t i = 0; i < block; ++i) {
    const int64_t c = i % channels;
    scale[i] = math::NormalizationScale(std[c]);
    shift[i] = math::NormalizationShift(mean[c], std[c]);
  }
  auto normalize = [&](int64_t i, int64_t j) {
    dst[i + j] = math::NormalizePixel(static_cast<float>(src[i + j]), scale[j], shift[j]);
  };
  int64_t n = pixels * channels;
  int64_t i = 0;
  for (; i + block <= n; i += block) {
    for (int64_t j = 0; j < block; ++j) normalize(i, j);
  }
  for (int64_t j = 0; i + j < n; ++j) normalize(i, j);
}

template <typename T, int kChannels>
void Transpose(const T* src, T* dst, int64_t pixels, int64_t channels) {
  if constexpr (kChannels > 0) channels = kChannels;
  for (int64_t p = 0; p < pixels; ++p, src += channels) {
    for (int64_t c = 0; c < channels; ++c) dst[c * pixels + p] = src[c];
  }
}

template <typename To, typename From>
To Convert(From v) {
  if constexpr (std::is_integral_v<To>) {
    double x = std::is_floating_point_v<From> ? std::nearbyint(static_cast<double>(v)) : v;
    x = std::clamp(x, static_cast<double>(std::numeric_limits<To>::lowest()),
                   static_cast<double>(std::numeric_limits<To>::max()));
    return static_cast<To>(x);
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace

Tensor ResizeBilinear(const Tensor& image, const CropBox& box, int64_t out_height,
                      int64_t out_width) {
  LS_CHECK(box.top >= 0 && box.left >= 0 && box.height > 0 && box.width > 0 &&
           box.top + box.height <= image.dim(0) && box.left + box.width <= image.dim(1))
      << "resize box outside " << ShapeToString(image.shape());
  LS_CHECK(image.dtype() == DType::kU8 || image.dtype() == DType::kF32)
      << "resize of " << DTypeName(image.dtype());
  Tensor out = Tensor::Empty({out_height, out_width, image.dim(2)}, image.dtype());
  VisitChannels(image.dim(2), [&](auto channels) {
    if (image.dtype() == DType::kU8) {
      ResizeRows<uint8_t, channels()>(image, box, &out);
    } else {
      ResizeRows<float, channels()>(image, box, &out);
    }
  });
  return out;
}

Tensor Crop(const Tensor& image, const CropBox& box) {
  int64_t pixel_bytes = image.dim(2) * static_cast<int64_t>(SizeOf(image.dtype()));
  Tensor out = Tensor::Zeros({box.height, box.width, image.dim(2)}, image.dtype());
  // The part of the box inside the image, in output coordinates.
  int64_t x_begin = std::max<int64_t>(0, -box.left);
  int64_t x_end = std::min(box.width, image.dim(1) - box.left);
  if (x_end <= x_begin) return out;
  const char* src = static_cast<const char*>(image.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  for (int64_t y = std::max<int64_t>(0, -box.top); y < box.height; ++y) {
    int64_t source_y = box.top + y;
    if (source_y >= image.dim(0)) break;
    std::memcpy(dst + (y * box.width + x_begin) * pixel_bytes,
                src + (source_y * image.dim(1) + box.left + x_begin) * pixel_bytes,
                (x_end - x_begin) * pixel_bytes);
  }
  return out;
}

Tensor FlipHorizontal(const Tensor& image) {
  Tensor out = Tensor::Empty(image.shape(), image.dtype());
  bool known = VisitDType(image.dtype(), [&](auto type) {
    using T = decltype(type);
    VisitChannels(image.dim(2), [&](auto channels) {
      Flip<T, channels()>(image.data<T>(), out.data<T>(), image.dim(0), image.dim(1), image.dim(2));
    });
  });
  LS_CHECK(known) << "flip of " << DTypeName(image.dtype());
  return out;
}

Tensor NormalizeChannels(const Tensor& image, absl::Span<const float> mean,
                         absl::Span<const float> std) {
  Tensor out = Tensor::Empty(image.shape(), DType::kF32);
  int64_t pixels = image.dim(0) * image.dim(1);
  if (image.dtype() == DType::kU8) {
    Normalize(image.data<uint8_t>(), out.data<float>(), pixels, image.dim(2), mean, std);
  } else {
    Normalize(image.data<float>(), out.data<float>(), pixels, image.dim(2), mean, std);
  }
  return out;
}

Tensor HwcToChw(const Tensor& image) {
  Tensor out = Tensor::Empty({image.dim(2), image.dim(0), image.dim(1)}, image.dtype());
  bool known = VisitDType(image.dtype(), [&](auto type) {
    using T = decltype(type);
    VisitChannels(image.dim(2), [&](auto channels) {
      Transpose<T, channels()>(image.data<T>(), out.data<T>(), image.dim(0) * image.dim(1),
                               image.dim(2));
    });
  });
  LS_CHECK(known) << "HWC to CHW of " << DTypeName(image.dtype());
  return out;
}

bool IsCastSupported(DType dtype) {
  return VisitDType(dtype, [](auto) {});
}

Tensor CastTo(const Tensor& tensor, DType dtype) {
  Tensor out = Tensor::Empty(tensor.shape(), dtype);
  bool known = VisitDType(tensor.dtype(), [&](auto from_type) {
    using From = decltype(from_type);
    VisitDType(dtype, [&](auto to_type) {
      using To = decltype(to_type);
      const From* src = tensor.data<From>();
      To* dst = out.data<To>();
      for (int64_t i = 0; i < tensor.numel(); ++i) dst[i] = Convert<To>(src[i]);
    });
  });
  LS_CHECK(known && IsCastSupported(dtype))
      << "cast of " << DTypeName(tensor.dtype()) << " to " << DTypeName(dtype);
  return out;
}

}  // namespace lockstep::dataset
