#pragma once

// The 16-bit floating-point dtypes as host storage types, with their conversions to and from
// float32: bfloat16 (the upper half of a float32) and IEEE binary16. Conversions from float32
// round to nearest, ties to even, as oneDNN, CUDA and PyTorch do; NaN stays NaN. Bulk casts go
// through the backends' reorders; these are for the per-element loops and for files.

#include <bit>
#include <cstdint>

#include "core/dtype.h"

namespace lockstep {

struct BFloat16 {
  uint16_t bits;
};
struct Float16 {
  uint16_t bits;
};

template <>
constexpr DType DTypeOf<BFloat16>() {
  return DType::kBF16;
}
template <>
constexpr DType DTypeOf<Float16>() {
  return DType::kF16;
}

inline float ToFloat(float x) { return x; }

inline float ToFloat(BFloat16 x) { return std::bit_cast<float>(uint32_t{x.bits} << 16); }

inline float ToFloat(Float16 x) {
  const uint32_t sign = uint32_t{x.bits & 0x8000u} << 16;
  const uint32_t exponent = (x.bits >> 10) & 0x1f;
  const uint32_t mantissa = x.bits & 0x3ff;
  if (exponent == 0) {  // zero or subnormal: mantissa units of 2^-24
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign != 0 ? -magnitude : magnitude;
  }
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  // Rebias the exponent from 15 to 127.
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

// Rounds `value` right by `shift` bits, to nearest, ties to even.
inline uint32_t RoundShiftRight(uint32_t value, int shift) {
  const uint32_t kept = value >> shift;
  const uint32_t rest = value & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  return kept + (rest > half || (rest == half && (kept & 1) != 0) ? 1 : 0);
}

template <typename T>
T FloatTo(float x);

template <>
inline float FloatTo<float>(float x) {
  return x;
}

template <>
inline BFloat16 FloatTo<BFloat16>(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {  // NaN: keep the sign, make it quiet
    return {static_cast<uint16_t>((bits >> 16) | 0x40)};
  }
  // A carry out of the mantissa rounds into the exponent, up to infinity: that is correct.
  return {static_cast<uint16_t>(RoundShiftRight(bits, 16))};
}

template <>
inline Float16 FloatTo<Float16>(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return {static_cast<uint16_t>(sign | 0x7e00)};  // NaN
  // 65520 and up round to infinity (65504 is the largest finite binary16).
  if (magnitude >= 0x477ff000u) return {static_cast<uint16_t>(sign | 0x7c00)};
  if (magnitude >= 0x38800000u) {  // normal in binary16: rebias the exponent, round 23 -> 10 bits
    return {static_cast<uint16_t>(sign | RoundShiftRight(magnitude - 0x38000000u, 13))};
  }
  if (magnitude < 0x33000000u) return {sign};  // below 2^-25: rounds to zero
  // Subnormal in binary16: the mantissa with its leading bit, in units of 2^-24.
  const int exponent = static_cast<int>(magnitude >> 23);
  const uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
  return {static_cast<uint16_t>(sign | RoundShiftRight(mantissa, 126 - exponent))};
}

}  // namespace lockstep
