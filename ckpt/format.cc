#include "ckpt/format.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "core/half.h"
#include "core/logging.h"

namespace lockstep::ckpt {
namespace {

static_assert(std::endian::native == std::endian::little,
              "checkpoint contents are little-endian and copied as they are");

template <typename T>
double Load(const char* element) {
  T value;
  std::memcpy(&value, element, sizeof(T));
  return static_cast<double>(value);
}

double LoadBool(const char* element) { return *element != 0 ? 1.0 : 0.0; }

template <typename Half>
double LoadHalf(const char* element) {
  Half value;
  std::memcpy(&value.bits, element, sizeof(value.bits));
  return ToFloat(value);
}

constexpr std::array<TensorTypeInfo, 14> kTypes = {{
    {"Int8", 1, std::nullopt, Load<int8_t>},
    {"UInt8", 1, DType::kU8, Load<uint8_t>},
    {"Int16", 2, std::nullopt, Load<int16_t>},
    {"UInt16", 2, std::nullopt, Load<uint16_t>},
    {"Int32", 4, DType::kI32, Load<int32_t>},
    {"UInt32", 4, std::nullopt, Load<uint32_t>},
    {"Int64", 8, DType::kI64, Load<int64_t>},
    {"UInt64", 8, std::nullopt, Load<uint64_t>},
    {"Float16", 2, DType::kF16, LoadHalf<Float16>},
    {"Float32", 4, DType::kF32, Load<float>},
    {"Float64", 8, DType::kF64, Load<double>},
    {"Bool", 1, DType::kBool, LoadBool},
    {"BFloat16", 2, DType::kBF16, LoadHalf<BFloat16>},
    {"str", 1, std::nullopt, nullptr},
}};

}  // namespace

const TensorTypeInfo* FindTensorType(absl::string_view name) {
  for (const TensorTypeInfo& type : kTypes) {
    if (name == type.name) return &type;
  }
  return nullptr;
}

const TensorTypeInfo& TensorTypeOf(DType dtype) {
  for (const TensorTypeInfo& type : kTypes) {
    if (type.dtype == dtype) return type;
  }
  LS_CHECK(false) << "no MindSpore tensor_type for " << DTypeName(dtype);
  return kTypes[0];
}

std::vector<int64_t> DimsOnDisk(const Shape& shape) {
  if (shape.empty()) return {0};
  return shape;
}

Shape ShapeFromDisk(const std::vector<int64_t>& dims, size_t content_bytes,
                    const TensorTypeInfo& type) {
  if (dims == std::vector<int64_t>{0} && content_bytes == type.size) return {};
  return dims;
}

std::string EncodeCrcTrailer(uint32_t crc) {
  std::string trailer(kCrcMagic);
  for (int shift = 72; shift >= 0; shift -= 8) {
    trailer.push_back(static_cast<char>(shift < 32 ? (crc >> shift) & 0xff : 0));
  }
  return trailer;
}

std::optional<uint64_t> DecodeCrcTrailer(absl::string_view trailer) {
  if (trailer.size() != kCrcTrailerBytes || !absl::StartsWith(trailer, kCrcMagic)) {
    return std::nullopt;
  }
  uint64_t crc = 0;
  for (size_t i = kCrcMagic.size(); i < kCrcTrailerBytes; ++i) {
    const auto byte = static_cast<uint8_t>(trailer[i]);
    if (crc >> 56 != 0) return UINT64_MAX;  // over 64 bits: certainly not a CRC32
    crc = (crc << 8) | byte;
  }
  return crc;
}

std::string KnownTensorTypes() {
  return absl::StrJoin(
      kTypes, ", ", [](std::string* out, const TensorTypeInfo& type) { out->append(type.name); });
}

}  // namespace lockstep::ckpt
