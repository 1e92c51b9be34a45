#pragma once

// The element-wise arithmetic of host reductions, shared by the host communicators (MPI's
// user-defined operations for 16-bit floats, gloo's reduce functions): 16-bit floats are
// combined in float32 and rounded to nearest even, as NCCL reduces them, so a result is off by
// at most one rounding per hop; kAvg is a sum and then a division on every rank.

#include <algorithm>
#include <cstddef>

#include "core/half.h"
#include "core/tensor.h"
#include "parallel/communicator.h"

namespace lockstep::parallel {

struct SumOf {
  template <typename T>
  T operator()(T a, T b) const {
    return a + b;
  }
};
struct MaxOf {
  template <typename T>
  T operator()(T a, T b) const {
    return std::max(a, b);
  }
};
struct MinOf {
  template <typename T>
  T operator()(T a, T b) const {
    return std::min(a, b);
  }
};

// out[i] = combine(a[i], b[i]); out may be a or b.
template <typename T, typename Combine>
void CombineElements(const T* a, const T* b, T* out, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if constexpr (std::is_same_v<T, BFloat16> || std::is_same_v<T, Float16>) {
      out[i] = FloatTo<T>(Combine()(ToFloat(a[i]), ToFloat(b[i])));
    } else {
      out[i] = Combine()(a[i], b[i]);
    }
  }
}

// The second half of kAvg, on a host tensor: each element divided by `size` (16-bit floats in
// float32, rounded once). Floating-point dtypes only, as the collectives' checks allow.
void DivideBySize(const Tensor& tensor, int size);

}  // namespace lockstep::parallel
