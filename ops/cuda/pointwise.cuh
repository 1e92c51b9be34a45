#pragma once

// The CUDA element-wise kernel, one grid-stride loop over the functors of ops/elementwise_math.h:
// y[i] = op(x0[i], x1[i], ...) in float for every element type (16-bit values are loaded to float
// and rounded back when stored), over packs of 8 bytes where the pointers allow. Include from .cu
// files only, and instantiate LaunchPointwise there for each functor (ops/cuda/elementwise.cu).

#include <array>
#include <cstddef>
#include <utility>

#include "ops/cuda/device_loops.cuh"
#include "ops/cuda/elementwise_kernels.h"
#include "ops/cuda/float_conversions.cuh"

namespace lockstep::cuda {

// ForEachPack's functor: a pack of V elements of every input and the output at a time.
template <typename T, typename Op, size_t kInputs>
struct PointwiseFn {
  Op op;
  T* y;                                   // (n)
  const T* x[kInputs > 0 ? kInputs : 1];  // (n) each

  template <int V>
  bool Fits() const {
    bool fits = PacksFit<V>(y);
    if constexpr (kInputs > 0) {  // Fill's functor reads no input
      for (size_t j = 0; j < kInputs; ++j) fits = fits && PacksFit<V>(x[j]);
    }
    return fits;
  }

  template <int V>
  __device__ void Apply(int64_t i) const {
    Pack<T, V> in[kInputs > 0 ? kInputs : 1];
    if constexpr (kInputs > 0) {
      for (size_t j = 0; j < kInputs; ++j) in[j] = LoadPack<V>(x[j], i);
    }
    Pack<T, V> out;
    for (int k = 0; k < V; ++k) {
      out.at[k] = FromF32<T>(Call(in, k, std::make_index_sequence<kInputs>{}));
    }
    StorePack<V>(y, i, out);
  }

  template <int V, size_t... J>
  __device__ float Call(const Pack<T, V>* in, int k, std::index_sequence<J...>) const {
    return op(ToF32(in[J].at[k])...);
  }
};

template <typename T, typename Op, size_t kInputs>
cudaError_t LaunchPointwise(Op op, const std::array<const T*, kInputs>& x, T* y, int64_t n,
                            cudaStream_t stream) {
  PointwiseFn<T, Op, kInputs> fn{op, y, {}};
  if constexpr (kInputs > 0) {
    for (size_t j = 0; j < kInputs; ++j) fn.x[j] = x[j];
  }
  return ForEachPack<T>(n, stream, fn);
}

}  // namespace lockstep::cuda
