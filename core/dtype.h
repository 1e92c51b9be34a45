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
