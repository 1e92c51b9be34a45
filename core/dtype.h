#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace lockstep {

enum class DType : uint8_t { kF32, kF16, kBF16, kF64, kI32, kI64, kU8, kBool };

// Bytes of one element.
size_t SizeOf(DType dtype);
// Short lowercase name used in messages and graph dumps ("f32", "i32", ...).
const char* DTypeName(DType dtype);
// Inverse of DTypeName; false when the name is unknown.
bool ParseDType(std::string_view name, DType* dtype);

// bf16 and f16: stored in 16 bits, computed in float32.
constexpr bool IsLowPrecision(DType dtype) { return dtype == DType::kBF16 || dtype == DType::kF16; }
// Float32 and the low-precision dtypes: what the kernels compute in float32, mixed precision casts
// between and the float layouts hold. Not f64, which keeps to its own kernels.
constexpr bool IsFloat(DType dtype) { return dtype == DType::kF32 || IsLowPrecision(dtype); }
// The IsFloat dtypes, for registering kernels in each.
inline constexpr DType kFloatDTypes[] = {DType::kF32, DType::kBF16, DType::kF16};

template <typename T>
constexpr DType DTypeOf();
template <>
constexpr DType DTypeOf<float>() {
  return DType::kF32;
}
template <>
constexpr DType DTypeOf<double>() {
  return DType::kF64;
}
template <>
constexpr DType DTypeOf<int32_t>() {
  return DType::kI32;
}
template <>
constexpr DType DTypeOf<int64_t>() {
  return DType::kI64;
}
template <>
constexpr DType DTypeOf<uint8_t>() {
  return DType::kU8;
}
template <>
constexpr DType DTypeOf<bool>() {
  return DType::kBool;
}

}  // namespace lockstep
