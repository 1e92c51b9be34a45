#pragma once

// Window arithmetic of the CUDA pooling kernels (ops/cuda/pool.cu); the CPU runs oneDNN's, whose
// windows these follow (PyTorch's: symmetric padding, AvgPool dividing by the whole window or its
// in-bounds part).

#include <cstdint>

#include "ops/host_device.h"

namespace lockstep::math {

// x (N, C, H, W) -> y (N, C, OH, OW) under a kernel, stride and padding.
struct PoolGeometry {
  int64_t n = 1, c = 1, h = 1, w = 1, oh = 1, ow = 1;
  int kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0;
  bool count_include_pad = true;
};

// The outputs [first, last] along one axis whose windows cover input index i (empty when
// first > last): o * stride - pad <= i < o * stride - pad + kernel.
LS_HOST_DEVICE inline void CoveringOutputs(int64_t i, int kernel, int stride, int pad,
                                           int64_t outputs, int64_t* first, int64_t* last) {
  const int64_t shifted = i + pad;
  const int64_t lo = shifted - kernel + 1;
  *first = lo <= 0 ? 0 : (lo + stride - 1) / stride;
  const int64_t hi = shifted / stride;
  *last = hi < outputs - 1 ? hi : outputs - 1;
}

// AvgPool's divisor for output (oh, ow): the window, or its part inside the input.
LS_HOST_DEVICE inline int AvgDivisor(const PoolGeometry& g, int64_t oh, int64_t ow) {
  if (g.count_include_pad) return g.kh * g.kw;
  const int64_t h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
  const int64_t h1 = h0 + g.kh < g.h ? h0 + g.kh : g.h, w1 = w0 + g.kw < g.w ? w0 + g.kw : g.w;
  return static_cast<int>(((h1) - (h0 > 0 ? h0 : 0)) * ((w1) - (w0 > 0 ? w0 : 0)));
}

}  // namespace lockstep::math
