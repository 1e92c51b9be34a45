#pragma once

// Window arithmetic of the CUDA pooling kernels (ops/cuda/pool.cu); the CPU runs oneDNN's, whose
// windows these follow (PyTorch's: symmetric padding, AvgPool dividing by the whole window or its
// in-bounds part).

#include <cstdint>

#include "ops/host_device.h"

namespace lockstep::math {

// x (N, C, H, W) -> y (N, C, OH, OW) under a kernel, stride and padding. channels_last: x, y and
// their gradients are stored (N, H, W, C) (the CUDA backend's NHWC layout for 16-bit data); a
// MaxPool's argmax is the kernels' own and stored as y is, element i for element i of y.
struct PoolGeometry {
  int64_t n = 1, c = 1, h = 1, w = 1, oh = 1, ow = 1;
  int kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0;
  bool count_include_pad = true;
  bool channels_last = false;
};

// The index arithmetic below is over an integer type I: int64_t, or int32_t where every index
// fits, whose divisions a GPU does several times faster.

// The storage offset of element (n, c, h, w) of an (N, C, H, W) value with `channels`, `height`
// and `width`, stored plain or channels-last.
template <typename I>
LS_HOST_DEVICE inline I ElementOffset(I n, I c, I h, I w, I channels, I height, I width,
                                      bool channels_last) {
  return channels_last ? ((n * height + h) * width + w) * channels + c
                       : ((n * channels + c) * height + h) * width + w;
}

// The (n, c, h, w) of storage element i: ElementOffset's inverse.
template <typename I>
struct Element4Of {
  I n, c, h, w;
};
using Element4 = Element4Of<int64_t>;
template <typename I>
LS_HOST_DEVICE inline Element4Of<I> ElementAt(I i, I channels, I height, I width,
                                              bool channels_last) {
  if (channels_last) {
    const I c = i % channels, pixel = i / channels;
    return {pixel / (width * height), c, pixel / width % height, pixel % width};
  }
  const I w = i % width, row = i / width;
  return {row / height / channels, row / height % channels, row % height, w};
}

// The outputs [first, last] along one axis whose windows cover input index i (empty when
// first > last): o * stride - pad <= i < o * stride - pad + kernel.
template <typename I>
LS_HOST_DEVICE inline void CoveringOutputs(I i, int kernel, int stride, int pad, I outputs,
                                           I* first, I* last) {
  const I shifted = i + pad;
  const I lo = shifted - kernel + 1;
  *first = lo <= 0 ? 0 : (lo + stride - 1) / stride;
  const I hi = shifted / stride;
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
