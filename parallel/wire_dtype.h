#pragma once

// The dtype an AllReduce node moves and sums its tensors in (its "wire_dtype" attribute): their
// own, or bf16/f16 for float32 tensors, which are rounded into a bucket of that dtype, reduced
// and converted back (ParallelOptions::allreduce_dtype).

#include <string>

#include "core/dtype.h"
#include "core/status.h"

namespace lockstep::parallel {

// Whether tensors of `dtype` may be reduced in `wire`.
absl::Status CheckWireDType(DType dtype, DType wire);

// The "wire_dtype" attribute of an AllReduce over `dtype` tensors, checked; empty means `dtype`.
absl::StatusOr<DType> ParseWireDType(DType dtype, const std::string& attr);

}  // namespace lockstep::parallel
