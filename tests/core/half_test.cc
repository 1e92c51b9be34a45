#include "core/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

namespace lockstep {
namespace {

template <typename T>
bool IsNan(T x) {
  return std::isnan(ToFloat(x));
}

// Every 16-bit pattern survives the trip through float32 (NaNs as NaNs).
template <typename T>
void ExpectAllPatternsRoundTrip() {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const T x{static_cast<uint16_t>(bits)};
    const T back = FloatTo<T>(ToFloat(x));
    if (IsNan(x)) {
      EXPECT_TRUE(IsNan(back)) << bits;
    } else {
      EXPECT_EQ(back.bits, x.bits) << bits;
    }
  }
}

TEST(HalfTest, EveryPatternRoundTrips) {
  ExpectAllPatternsRoundTrip<BFloat16>();
  ExpectAllPatternsRoundTrip<Float16>();
}

// The value of a pattern, with infinity read as the next step past the largest finite value
// (where rounding to nearest sends what lies at least halfway to it).
template <typename T>
double ValueOf(uint16_t bits) {
  const float value = ToFloat(T{bits});
  if (!std::isinf(value)) return value;
  const double largest = ToFloat(T{static_cast<uint16_t>(bits - 1)});
  const double step = std::abs(largest - ToFloat(T{static_cast<uint16_t>(bits - 2)}));
  return std::copysign(std::abs(largest) + step, value);
}

// The converted value is the representable one nearest to x, ties to the even pattern; checked
// against both neighbours of the result, in double.
template <typename T>
void ExpectNearest(float x) {
  const T y = FloatTo<T>(x);
  if (std::isnan(x)) {
    EXPECT_TRUE(IsNan(y));
    return;
  }
  if (std::isinf(x)) {
    EXPECT_TRUE(std::isinf(ToFloat(y)));
    return;
  }
  const uint16_t magnitude = y.bits & 0x7fff;
  const double error = std::abs(ValueOf<T>(y.bits) - x);
  for (int step : {-1, 1}) {
    if ((magnitude == 0 && step == -1) || (std::isinf(ToFloat(y)) && step == 1)) continue;
    const uint16_t neighbour = static_cast<uint16_t>(y.bits + step);
    const double other = std::abs(ValueOf<T>(neighbour) - x);
    EXPECT_LE(error, other) << "x = " << x << ", got bits " << y.bits;
    if (error == other) {
      EXPECT_EQ(y.bits & 1, 0) << "tie not to even for x = " << x;
    }
  }
}

TEST(HalfTest, ConversionRoundsToNearestEven) {
  // A stride through all float32 patterns that is odd, so every low-bit pattern occurs.
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 65521) {
    const float x = std::bit_cast<float>(static_cast<uint32_t>(bits));
    ExpectNearest<BFloat16>(x);
    ExpectNearest<Float16>(x);
  }
}

TEST(HalfTest, Float16EdgeCases) {
  EXPECT_EQ(FloatTo<Float16>(65504.0f).bits, 0x7bff);  // largest finite
  EXPECT_EQ(FloatTo<Float16>(65519.0f).bits, 0x7bff);
  EXPECT_EQ(FloatTo<Float16>(65520.0f).bits, 0x7c00);  // rounds to infinity
  EXPECT_EQ(FloatTo<Float16>(-std::numeric_limits<float>::infinity()).bits, 0xfc00);
  EXPECT_EQ(FloatTo<Float16>(0x1p-24f).bits, 0x0001);  // smallest subnormal
  EXPECT_EQ(FloatTo<Float16>(0x1p-25f).bits, 0x0000);  // tie: to even, zero
  EXPECT_EQ(FloatTo<Float16>(0x1.8p-25f).bits, 0x0001);
  EXPECT_EQ(FloatTo<Float16>(0x1p-14f).bits, 0x0400);  // smallest normal
  EXPECT_EQ(FloatTo<Float16>(-0.0f).bits, 0x8000);
  EXPECT_EQ(ToFloat(Float16{0x3c00}), 1.0f);
}

TEST(HalfTest, BFloat16EdgeCases) {
  EXPECT_EQ(FloatTo<BFloat16>(1.0f).bits, 0x3f80);
  EXPECT_EQ(FloatTo<BFloat16>(std::bit_cast<float>(0x3f808000u)).bits, 0x3f80);  // tie to even
  EXPECT_EQ(FloatTo<BFloat16>(std::bit_cast<float>(0x3f818000u)).bits, 0x3f82);
  EXPECT_EQ(FloatTo<BFloat16>(std::numeric_limits<float>::max()).bits, 0x7f80);  // to infinity
  EXPECT_TRUE(IsNan(FloatTo<BFloat16>(std::bit_cast<float>(0x7f800001u))));  // NaN stays NaN
}

}  // namespace
}  // namespace lockstep
