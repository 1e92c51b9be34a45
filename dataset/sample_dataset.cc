#include "dataset/sample_dataset.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>

#include "core/rng.h"
#include "dataset/sample_random.h"

namespace lockstep::dataset {
namespace {

// Labels follow the sorted folder names, as ImageFolder assigns them.
enum SampleClass {
  kCheckerboard,
  kCrosses,
  kDiagonalStripes,
  kDots,
  kGrid,
  kHorizontalStripes,
  kRings,
  kSpeckles,
  kVerticalStripes,
  kZigzag,
  kNumClasses,
};

// Pixel noise draws from counters far above the style's few draws of the same stream.
constexpr uint64_t kNoiseCounter = uint64_t{1} << 32;

using Color = std::array<float, 3>;

struct Style {
  Color background;
  Color foreground;
  double period;     // pixels per pattern repeat
  double cos_angle;  // pattern orientation
  double sin_angle;
  double phase_u;  // pattern offset, in periods
  double phase_v;
  double duty;       // covered fraction (line width, dot radius, ...), in periods
  double amplitude;  // zigzag height; cross arm length
  double center_x;   // rings
  double center_y;
  double light_x;  // brightness slope across the image
  double light_y;
  float noise;  // pixel noise standard deviation
};

float Luma(const Color& c) { return 0.299f * c[0] + 0.587f * c[1] + 0.114f * c[2]; }

double Frac(double x) { return x - std::floor(x); }

double OrientationDegrees(int label, SampleRandom& random) {
  double jitter = random.Uniform(-10.0f, 10.0f);
  switch (label) {
    case kHorizontalStripes:
      return jitter;
    case kVerticalStripes:
      return 90.0 + jitter;
    case kDiagonalStripes:  // both diagonals, so a horizontal flip stays in the class
      return (random.Uniform() < 0.5f ? 45.0 : 135.0) + jitter;
    default:
      return random.Uniform(0.0f, 360.0f);
  }
}

// hue in degrees, saturation and value in [0, 1] -> RGB in [0, 255].
Color Hsv(double hue, double saturation, double value) {
  double h = Frac(hue / 360.0) * 6.0;
  double f = h - std::floor(h);
  double p = value * (1 - saturation), q = value * (1 - saturation * f);
  double t = value * (1 - saturation * (1 - f));
  std::array<std::array<double, 3>, 6> sectors = {
      {{value, t, p}, {q, value, p}, {p, value, t}, {p, q, value}, {t, p, value}, {value, p, q}}};
  const std::array<double, 3>& rgb = sectors[static_cast<int>(h) % 6];
  return {static_cast<float>(255 * rgb[0]), static_cast<float>(255 * rgb[1]),
          static_cast<float>(255 * rgb[2])};
}

// As in Fruit-360, colour hints at the class: each class has a hue (36 degrees apart) that an
// image varies by up to 24 degrees, so neighbouring classes overlap and the texture decides.
// Foreground and background differ enough in brightness to show through the noise.
void DrawColors(int label, SampleRandom& random, Style* style) {
  for (int attempt = 0; attempt < 64; ++attempt) {
    double hue = 36.0 * label + random.Uniform(-24.0f, 24.0f);
    style->background = Hsv(hue, random.Uniform(0.3f, 1.0f), random.Uniform(0.15f, 1.0f));
    style->foreground = Hsv(hue + random.Uniform(-20.0f, 20.0f), random.Uniform(0.3f, 1.0f),
                            random.Uniform(0.15f, 1.0f));
    if (std::abs(Luma(style->background) - Luma(style->foreground)) >= 60.0f) return;
  }
}

Style DrawStyle(int label, int64_t height, int64_t width, SampleRandom& random) {
  Style style;
  DrawColors(label, random, &style);
  // Patterns keep at least 8 pixels per period in small images, and grow with large ones.
  double scale = std::max(1.0, std::min(height, width) / 100.0);
  style.period = random.Uniform(8.0f, 16.0f) * scale;
  double angle = OrientationDegrees(label, random) * std::numbers::pi / 180.0;
  style.cos_angle = std::cos(angle);
  style.sin_angle = std::sin(angle);
  style.phase_u = random.Uniform();
  style.phase_v = random.Uniform();
  bool thin = label == kGrid || label == kCrosses;
  style.duty = thin ? random.Uniform(0.1f, 0.18f)
                    : (label == kDots ? random.Uniform(0.2f, 0.35f) : random.Uniform(0.35f, 0.6f));
  style.amplitude = random.Uniform(0.3f, 0.45f);
  if (label == kZigzag) style.amplitude = random.Uniform(0.8f, 1.4f);
  style.center_x = random.Uniform(0.2f, 0.8f) * width;
  style.center_y = random.Uniform(0.2f, 0.8f) * height;
  style.light_x = random.Uniform(-0.4f, 0.4f);
  style.light_y = random.Uniform(-0.4f, 0.4f);
  style.noise = random.Uniform(2.0f, 10.0f);
  return style;
}

// Smooth random blobs: value noise on a lattice of one period, thresholded.
class Speckles {
 public:
  Speckles(int64_t cells_y, int64_t cells_x, SampleRandom& random)
      : cells_x_(cells_x), values_(cells_y * cells_x) {
    for (float& v : values_) v = random.Uniform();
  }
  bool Covered(double y, double x) const {
    int64_t i = static_cast<int64_t>(y), j = static_cast<int64_t>(x);
    double fy = Smooth(y - i), fx = Smooth(x - j);
    auto at = [&](int64_t a, int64_t b) { return values_[a * cells_x_ + b]; };
    double top = at(i, j) + fx * (at(i, j + 1) - at(i, j));
    double bottom = at(i + 1, j) + fx * (at(i + 1, j + 1) - at(i + 1, j));
    return top + fy * (bottom - top) > 0.5;
  }

 private:
  static double Smooth(double t) { return t * t * (3 - 2 * t); }
  int64_t cells_x_;
  std::vector<float> values_;
};

// Whether the pattern covers pixel (x, y) with the foreground colour.
bool Covered(int label, const Style& s, const Speckles& speckles, double x, double y) {
  double u = (x * s.cos_angle + y * s.sin_angle) / s.period + s.phase_u;
  double v = (-x * s.sin_angle + y * s.cos_angle) / s.period + s.phase_v;
  double fu = Frac(u) - 0.5, fv = Frac(v) - 0.5;
  switch (label) {
    case kCheckerboard:
      return ((static_cast<int64_t>(std::floor(u)) + static_cast<int64_t>(std::floor(v))) & 1) != 0;
    case kCrosses:
      return (std::abs(fu) < s.duty / 2 && std::abs(fv) < s.amplitude) ||
             (std::abs(fv) < s.duty / 2 && std::abs(fu) < s.amplitude);
    case kDots:
      return fu * fu + fv * fv < s.duty * s.duty;
    case kGrid:
      return Frac(u) < s.duty || Frac(v) < s.duty;
    case kRings:
      return Frac(std::hypot(x - s.center_x, y - s.center_y) / s.period + s.phase_u) < s.duty;
    case kSpeckles:
      return speckles.Covered(y / s.period, x / s.period);
    case kZigzag:
      return Frac(v + s.amplitude * std::abs(fu)) < s.duty;
    default:  // the three stripe classes differ only in orientation
      return Frac(v) < s.duty;
  }
}

}  // namespace

const std::vector<std::string>& SampleClassNames() {
  static const std::vector<std::string> names = {
      "checkerboard", "crosses",  "diagonal_stripes", "dots",  "grid", "horizontal_stripes",
      "rings",        "speckles", "vertical_stripes", "zigzag"};
  return names;
}

Tensor RenderSampleImage(int label, uint64_t seed, int64_t index, int64_t height, int64_t width) {
  LS_CHECK(label >= 0 && label < kNumClasses) << "sample class " << label;
  uint64_t stream = StreamId(StreamPurpose::kSampleImage, label, index);
  SampleRandom random(seed, stream, 0);
  Style style = DrawStyle(label, height, width, random);
  Speckles speckles(static_cast<int64_t>(height / style.period) + 2,
                    static_cast<int64_t>(width / style.period) + 2, random);
  std::vector<float> noise(height * width * 3);
  Philox(seed, stream)
      .Normal(noise.data(), static_cast<int64_t>(noise.size()), 0.0f, style.noise, kNoiseCounter);
  Tensor image = Tensor::Empty({height, width, 3}, DType::kU8);
  uint8_t* out = image.data<uint8_t>();
  const float* jitter = noise.data();
  for (int64_t y = 0; y < height; ++y) {
    for (int64_t x = 0; x < width; ++x) {
      const Color& color =
          Covered(label, style, speckles, x, y) ? style.foreground : style.background;
      double light = 1.0 + style.light_x * (static_cast<double>(x) / width - 0.5) +
                     style.light_y * (static_cast<double>(y) / height - 0.5);
      for (int c = 0; c < 3; ++c) {
        double value = color[c] * light + *jitter++;
        *out++ = static_cast<uint8_t>(std::clamp(std::lround(value), 0l, 255l));
      }
    }
  }
  return image;
}

}  // namespace lockstep::dataset
