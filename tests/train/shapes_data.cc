#include "tests/train/shapes_data.h"

#include <algorithm>

#include "core/rng.h"

namespace lockstep::train::testing {
namespace {

constexpr int64_t kMaxChannels = 4;

// Draws class `label` into one (channels, size, size) image with colour `colour`.
void DrawShape(int label, int64_t size, int64_t channels, const float* colour, const Philox& rng,
               float* image) {
  const int64_t extent = size / 2 + static_cast<int64_t>(rng.UniformInt(1, size / 4));
  const int64_t top = static_cast<int64_t>(rng.UniformInt(2, size - extent + 1));
  const int64_t left = static_cast<int64_t>(rng.UniformInt(3, size - extent + 1));
  const int64_t thick = 2;
  const int64_t mid = extent / 2 - thick / 2;
  auto inside = [&](int64_t y, int64_t x) {
    switch (label) {
      case 0:  // horizontal bar
        return y >= mid && y < mid + thick;
      case 1:  // vertical bar
        return x >= mid && x < mid + thick;
      case 2:  // hollow square
        return y < thick || x < thick || y >= extent - thick || x >= extent - thick;
      default:  // plus sign
        return (y >= mid && y < mid + thick) || (x >= mid && x < mid + thick);
    }
  };
  for (int64_t y = 0; y < extent; ++y) {
    for (int64_t x = 0; x < extent; ++x) {
      if (!inside(y, x)) continue;
      for (int64_t c = 0; c < channels; ++c) {
        image[(c * size + top + y) * size + left + x] += colour[c];
      }
    }
  }
}

}  // namespace

ShapeImages MakeShapeImages(int64_t count, int64_t channels, int64_t size, uint64_t seed) {
  ShapeImages data{Tensor::Empty({count, channels, size, size}, DType::kF32),
                   Tensor::Empty({count}, DType::kI32)};
  const int64_t pixels = channels * size * size;
  for (int64_t i = 0; i < count; ++i) {
    const Philox rng(seed, static_cast<uint64_t>(i));
    float* image = data.images.data<float>() + i * pixels;
    rng.Normal(image, pixels, 0.0f, 0.3f, /*offset=*/1000);
    LS_CHECK(channels <= kMaxChannels) << "at most " << kMaxChannels << " channels";
    float colour[kMaxChannels];
    rng.Uniform(colour, channels, /*offset=*/16);
    for (int64_t c = 0; c < channels; ++c) colour[c] += 0.8f;
    const int label = static_cast<int>(i % kShapeClasses);
    DrawShape(label, size, channels, colour, rng, image);
    data.labels.data<int32_t>()[i] = label;
  }
  return data;
}

}  // namespace lockstep::train::testing
