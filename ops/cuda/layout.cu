#include "ops/cuda/device_util.cuh"
#include "ops/cuda/layout_kernels.h"

namespace lockstep::cuda {
namespace {

// Output element i of the permutation, elements moved as E (their bytes, whatever the dtype).
template <typename E, bool kToNhwc>
struct NhwcPermuteFn {
  const E* from;  // (N, C, H, W) or (N, H, W, C)
  E* to;          // the other
  int64_t c, h, w;
  __device__ void operator()(int64_t i) const {
    if (kToNhwc) {  // i indexes (n, y, x, ch)
      const int64_t ch = i % c, x = (i / c) % w, y = (i / (c * w)) % h, n = i / (c * w * h);
      to[i] = from[((n * c + ch) * h + y) * w + x];
    } else {  // i indexes (n, ch, y, x)
      const int64_t x = i % w, y = (i / w) % h, ch = (i / (w * h)) % c, n = i / (w * h * c);
      to[i] = from[((n * h + y) * w + x) * c + ch];
    }
  }
};

template <typename E>
cudaError_t Permute(const void* from, void* to, const std::array<int64_t, 4>& d, bool to_nhwc,
                    cudaStream_t stream) {
  const int64_t n = d[0] * d[1] * d[2] * d[3];
  const auto* src = static_cast<const E*>(from);
  auto* dst = static_cast<E*>(to);
  if (to_nhwc) {
    return ForEachIndex(n, stream, NhwcPermuteFn<E, true>{src, dst, d[1], d[2], d[3]});
  }
  return ForEachIndex(n, stream, NhwcPermuteFn<E, false>{src, dst, d[1], d[2], d[3]});
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
