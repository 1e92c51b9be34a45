#pragma once

// The CUDA backend's one layout besides plain: NHWC, channels innermost, which cuDNN's tensor-core
// convolutions and batch norm want for 16-bit data. It applies to 4-D bf16 and f16 values of
// logical shape (N, C, H, W), stored (N, H, W, C); for convolution weights (O, C, KH, KW) the
// same permutation is cuDNN's KRSC, (O, KH, KW, C). It takes the plain byte size. Float32 stays
// plain (cuDNN's float32 kernels are as fast in NCHW, and the float32 path keeps its bits).

#include <cstddef>

#include "core/layout.h"
#include "graph/kernel.h"

namespace lockstep::cuda {

Layout NhwcLayout();
// 4-D and bf16 or f16.
bool NhwcEligible(const Shape& shape, DType dtype);
// NHWC for a value that can use it, else plain.
Layout NhwcIfEligible(const Value& value);
// cuDNN's batch norm and the own pooling kernels: every input and output NHWC where eligible
// (the float32 statistics and parameters stay plain).
LayoutChoice NhwcWhereEligible(const Node& node, const std::vector<Layout>& producer_layouts,
                               const SharedLayouts& shared);

// Permutes the elements of a 4-D (d0, d1, d2, d3) value, `element_bytes` each, between plain
// (d0, d1, d2, d3) and NHWC (d0, d2, d3, d1) storage, on the host.
void PermuteToNhwc(const void* plain, void* nhwc, const Shape& shape, size_t element_bytes);
void PermuteFromNhwc(const void* nhwc, void* plain, const Shape& shape, size_t element_bytes);

}  // namespace lockstep::cuda
