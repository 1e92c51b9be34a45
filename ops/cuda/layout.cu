#include <cstdint>

#include "ops/cuda/device_util.cuh"
#include "ops/cuda/layout_kernels.h"

namespace lockstep::cuda {
namespace {

// Output element i of the permutation, elements moved as E (their bytes, whatever the dtype).
// H and W move together, as one dimension of h * w positions; I is the index type: 32-bit where
// the tensor fits, as integer division dominates the cost.
template <typename E, bool kToNhwc, typename I>
struct NhwcPermuteFn {
  const E* from;  // (N, C, H, W) or (N, H, W, C)
  E* to;          // the other
  I c, hw;
  __device__ void operator()(int64_t index) const {
    const I i = static_cast<I>(index);
    if (kToNhwc) {  // i = (n * hw + p) * c + ch
      const I q = i / c, ch = i - q * c, n = q / hw, p = q - n * hw;
      to[i] = from[(n * c + ch) * hw + p];
    } else {  // i = (n * c + ch) * hw + p
      const I q = i / hw, p = i - q * hw, n = q / c, ch = q - n * c;
      to[i] = from[(n * hw + p) * c + ch];
    }
  }
};

template <typename E, typename I>
cudaError_t Permute(const void* from, void* to, const std::array<int64_t, 4>& d, bool to_nhwc,
                    cudaStream_t stream) {
  const int64_t n = d[0] * d[1] * d[2] * d[3];
  const auto* src = static_cast<const E*>(from);
  auto* dst = static_cast<E*>(to);
  const I c = static_cast<I>(d[1]), hw = static_cast<I>(d[2] * d[3]);
  if (to_nhwc) return ForEachIndex(n, stream, NhwcPermuteFn<E, true, I>{src, dst, c, hw});
  return ForEachIndex(n, stream, NhwcPermuteFn<E, false, I>{src, dst, c, hw});
}

template <typename E>
cudaError_t Permute(const void* from, void* to, const std::array<int64_t, 4>& d, bool to_nhwc,
                    cudaStream_t stream) {
  const int64_t n = d[0] * d[1] * d[2] * d[3];
  if (n <= static_cast<int64_t>(UINT32_MAX)) {
    return Permute<E, uint32_t>(from, to, d, to_nhwc, stream);
  }
  return Permute<E, int64_t>(from, to, d, to_nhwc, stream);
}

}  // namespace

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
