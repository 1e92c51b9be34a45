#include <cstdint>

#include "ops/cuda/device_loops.cuh"
#include "ops/cuda/float_conversions.cuh"
#include "ops/cuda/reorder_kernels.h"

namespace lockstep::cuda {
namespace {

// Output element i of the permutation, converted from From to To (a Reorder moves elements as
// unsigned integers of their size, whatever the dtype). H and W move together, as one dimension
// of h * w positions; I is the index type: 32-bit where the tensor fits, as integer division
// dominates the cost.
template <typename From, typename To, bool kToNhwc, typename I>
struct NhwcPermuteFn {
  const From* from;  // (N, C, H, W) or (N, H, W, C)
  To* to;            // the other
  I c, hw;
  __device__ void operator()(int64_t index) const {
    const I i = static_cast<I>(index);
    if (kToNhwc) {  // i = (n * hw + p) * c + ch
      const I q = i / c, ch = i - q * c, n = q / hw, p = q - n * hw;
      to[i] = Converted<To>(from[(n * c + ch) * hw + p]);
    } else {  // i = (n * c + ch) * hw + p
      const I q = i / hw, p = i - q * hw, n = q / c, ch = q - n * c;
      to[i] = Converted<To>(from[(n * hw + p) * c + ch]);
    }
  }
};

template <typename From, typename To, typename I>
cudaError_t Permute(const From* from, To* to, const std::array<int64_t, 4>& d, bool to_nhwc,
                    cudaStream_t stream) {
  const int64_t n = d[0] * d[1] * d[2] * d[3];
  const I c = static_cast<I>(d[1]), hw = static_cast<I>(d[2] * d[3]);
  if (to_nhwc) return ForEachIndex(n, stream, NhwcPermuteFn<From, To, true, I>{from, to, c, hw});
  return ForEachIndex(n, stream, NhwcPermuteFn<From, To, false, I>{from, to, c, hw});
}

template <typename From, typename To>
cudaError_t Permute(const From* from, To* to, const std::array<int64_t, 4>& d, bool to_nhwc,
                    cudaStream_t stream) {
  const int64_t n = d[0] * d[1] * d[2] * d[3];
  if (n <= static_cast<int64_t>(UINT32_MAX)) {
    return Permute<From, To, uint32_t>(from, to, d, to_nhwc, stream);
  }
  return Permute<From, To, int64_t>(from, to, d, to_nhwc, stream);
}

template <typename E>
cudaError_t Permute(const void* from, void* to, const std::array<int64_t, 4>& d, bool to_nhwc,
                    cudaStream_t stream) {
  return Permute(static_cast<const E*>(from), static_cast<E*>(to), d, to_nhwc, stream);
}

}  // namespace

template <typename From, typename To>
cudaError_t LaunchCastNhwcPermute(const From* from, To* to, const std::array<int64_t, 4>& dims,
                                  bool to_nhwc, cudaStream_t stream) {
  return Permute(from, to, dims, to_nhwc, stream);
}

#define LS_INSTANTIATE_CAST_PERMUTE(From)                                                         \
  template cudaError_t LaunchCastNhwcPermute(const From*, float*, const std::array<int64_t, 4>&,  \
                                             bool, cudaStream_t);                                 \
  template cudaError_t LaunchCastNhwcPermute(const From*, __half*, const std::array<int64_t, 4>&, \
                                             bool, cudaStream_t);                                 \
  template cudaError_t LaunchCastNhwcPermute(const From*, __nv_bfloat16*,                         \
                                             const std::array<int64_t, 4>&, bool, cudaStream_t)
LS_FOR_EACH_FLOAT_ELEMENT(LS_INSTANTIATE_CAST_PERMUTE);
#undef LS_INSTANTIATE_CAST_PERMUTE

cudaError_t LaunchNhwcPermute(const void* from, void* to, const std::array<int64_t, 4>& dims,
                              size_t element_bytes, bool to_nhwc, cudaStream_t stream) {
  switch (element_bytes) {
    case 1:
      return Permute<uint8_t>(from, to, dims, to_nhwc, stream);
    case 2:
      return Permute<uint16_t>(from, to, dims, to_nhwc, stream);
    case 4:
      return Permute<uint32_t>(from, to, dims, to_nhwc, stream);
    case 8:
      return Permute<uint64_t>(from, to, dims, to_nhwc, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace lockstep::cuda
