#pragma once

#include "core/tensor.h"

namespace lockstep {

// Memory layout of a 4-D value: plain row-major, or one of oneDNN's blocked layouts.
// - Activations (N, C, H, W): channel-blocked, 8 or 16 channels innermost, kept between
//   consecutive oneDNN nodes so they do not reorder after every op.
// - Convolution weights (O, I, KH, KW): blocked over both channel counts (OIhw8i8o is oneDNN's
//   ABcd8b8a), the layout its forward and filter-gradient kernels use, so parameters, their
//   gradients and moments are kept in it and the kernels do not reorder the weights every step.
// Which block is native depends on the CPU: 16 with AVX-512, 8 with AVX2. Blocked layouts are
// only used when the blocked dimensions are multiples of the block, so they occupy exactly the
// plain byte size.
enum class Layout : uint8_t { kPlain, kNChw8c, kNChw16c, kOIhw8i8o, kOIhw16i16o };

const char* LayoutName(Layout layout);
// Inverse of LayoutName; false when the name is unknown.
bool ParseLayout(const std::string& name, Layout* layout);
// The blocked layouts oneDNN's kernels prefer on this CPU.
Layout NativeBlockedLayout();
Layout NativeWeightLayout();
// True when a value of this type may use `layout` (always for kPlain).
bool LayoutEligible(Layout layout, const Shape& shape, DType dtype);

}  // namespace lockstep
