#pragma once

// Conversion between float32, bf16 and f16 for the CPU kernels: Cast, the float32 fallback, the
// float32 scale and shift of batch norm. Element by element with core/half.h's rounding, so it
// holds in every CPU layout (a blocked value's bytes are its elements in one order whatever its
// dtype). Not a oneDNN reorder: oneDNN 2.6 converts bf16 with its reference reorder on CPUs
// without AVX-512, about 100 ns an element.

#include <cstdint>

#include "core/dtype.h"

namespace lockstep::cpu {

// `n` elements of `from` (in `from_dtype`) into `to` (in `to_dtype`), both IsFloat (float32,
// bf16 or f16).
void ConvertFloats(const void* from, DType from_dtype, void* to, DType to_dtype, int64_t n);

}  // namespace lockstep::cpu
