#include "ops/cpu/convert_floats.h"

#include "core/half.h"
#include "core/logging.h"
#include "ops/cpu/vector_loop.h"

namespace lockstep::cpu {
namespace {

template <typename From, typename To>
void Convert(const void* from, void* to, int64_t n) {
  const From* x = static_cast<const From*>(from);
  To* y = static_cast<To*>(to);
  ParallelFor(n, [&](int64_t i) { y[i] = FloatTo<To>(ToFloat(x[i])); });
}

template <typename From>
void ConvertFrom(const void* from, void* to, DType to_dtype, int64_t n) {
  switch (to_dtype) {
    case DType::kF32:
      return Convert<From, float>(from, to, n);
    case DType::kBF16:
      return Convert<From, BFloat16>(from, to, n);
    case DType::kF16:
      return Convert<From, Float16>(from, to, n);
    default:
      LS_CHECK(false) << "ConvertFloats into " << DTypeName(to_dtype);
  }
}

}  // namespace

void ConvertFloats(const void* from, DType from_dtype, void* to, DType to_dtype, int64_t n) {
  switch (from_dtype) {
    case DType::kF32:
      return ConvertFrom<float>(from, to, to_dtype, n);
    case DType::kBF16:
      return ConvertFrom<BFloat16>(from, to, to_dtype, n);
    case DType::kF16:
      return ConvertFrom<Float16>(from, to, to_dtype, n);
    default:
      LS_CHECK(false) << "ConvertFloats from " << DTypeName(from_dtype);
  }
}

}  // namespace lockstep::cpu
