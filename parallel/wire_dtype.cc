#include "parallel/wire_dtype.h"

namespace lockstep::parallel {

absl::Status CheckWireDType(DType dtype, DType wire) {
  if (wire == dtype) return absl::OkStatus();
  if (dtype == DType::kF32 && IsLowPrecision(wire)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      DTypeName(dtype), " tensors are reduced in ",
      dtype == DType::kF32 ? "f32, bf16 or f16" : DTypeName(dtype), ", not in ", DTypeName(wire)));
}

absl::StatusOr<DType> ParseWireDType(DType dtype, const std::string& attr) {
  if (attr.empty()) return dtype;
  DType wire;
  if (!ParseDType(attr, &wire)) {
    return absl::InvalidArgumentError(absl::StrCat("wire_dtype '", attr, "' is not a dtype"));
  }
  LS_RETURN_IF_ERROR(CheckWireDType(dtype, wire));
  return wire;
}

}  // namespace lockstep::parallel
