#include "core/dtype.h"

#include <array>

namespace lockstep {
namespace {

struct DTypeInfo {
  DType dtype;
  size_t size;
  const char* name;
};

constexpr std::array<DTypeInfo, 8> kDTypes = {{
    {DType::kF32, 4, "f32"},
    {DType::kF16, 2, "f16"},
    {DType::kBF16, 2, "bf16"},
    {DType::kF64, 8, "f64"},
    {DType::kI32, 4, "i32"},
    {DType::kI64, 8, "i64"},
    {DType::kU8, 1, "u8"},
    {DType::kBool, 1, "bool"},
}};

}  // namespace

size_t SizeOf(DType dtype) { return kDTypes[static_cast<size_t>(dtype)].size; }

const char* DTypeName(DType dtype) { return kDTypes[static_cast<size_t>(dtype)].name; }

bool ParseDType(std::string_view name, DType* dtype) {
  for (const DTypeInfo& info : kDTypes) {
    if (name == info.name) {
      *dtype = info.dtype;
      return true;
    }
  }
  return false;
}

}  // namespace lockstep
