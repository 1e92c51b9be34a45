#pragma once

// Conv2DBackpropFilter as one matmul over the whole batch, for the shapes where oneDNN has no
// direct kernel. Its gemm-based kernel multiplies per image with K = OH * OW, which on ResNet's
// last stage at 64x64 (2x2 maps) is 4: each of the 8 images then rewrites the whole 9.4 MB
// gradient of a 512x512 3x3 filter. Here
//   dw (O, C*KH*KW) = dy^T (O, N*OH*OW) . columns (N*OH*OW, C*KH*KW)
// where the columns are x's windows unrolled (im2col) and dy^T is a oneDNN reorder of dy.

#include <memory>

#include "graph/kernel.h"

namespace lockstep {

// Whether the node (ungrouped, plain activations) can take this kernel within its scratch
// budget.
bool FilterGradByMatmulFits(const Node& node);

absl::StatusOr<std::unique_ptr<Kernel>> MakeFilterGradByMatmulKernel(const Node& node);

}  // namespace lockstep
