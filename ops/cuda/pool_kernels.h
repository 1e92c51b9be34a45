#pragma once

// Own CUDA pooling, with the CPU kernels' semantics exactly (windows as PyTorch's: symmetric
// padding counted as -inf by MaxPool; the first maximum in row-major order wins; AvgPool divides
// by the whole window or its in-bounds part). Gradients gather, each input element summing the
// windows that cover it in a fixed order, so they are deterministic without atomics. The window
// math is LS_HOST_DEVICE so CPU tests check it.

#include <cuda_runtime.h>

#include <cstdint>

#include "ops/cuda/host_device.h"

namespace lockstep::cuda {

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

// y and, when argmax is not null, the window index (kh * KW + kw) of each output's maximum.
cudaError_t LaunchMaxPool(const float* x, const PoolGeometry& g, float* y, int32_t* argmax,
                          cudaStream_t stream);
// dx[i] = sum of dy over the windows whose maximum is at i.
cudaError_t LaunchMaxPoolGrad(const float* dy, const int32_t* argmax, const PoolGeometry& g,
                              float* dx, cudaStream_t stream);
cudaError_t LaunchAvgPool(const float* x, const PoolGeometry& g, float* y, cudaStream_t stream);
cudaError_t LaunchAvgPoolGrad(const float* dy, const PoolGeometry& g, float* dx,
                              cudaStream_t stream);
// (N, C, H, W) -> (N, C): the mean of each plane, and its gradient spread back evenly.
cudaError_t LaunchGlobalAvgPool(const float* x, int64_t planes, int64_t plane, float* y,
                                cudaStream_t stream);
cudaError_t LaunchGlobalAvgPoolGrad(const float* dy, int64_t planes, int64_t plane, float* dx,
                                    cudaStream_t stream);

}  // namespace lockstep::cuda
