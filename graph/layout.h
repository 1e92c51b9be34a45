#pragma once

#include "core/tensor.h"

namespace lockstep {

// Memory layout of a 4-D value: the vocabulary of layouts values can have; which ones a device
// wants is its kernels' choice (their LayoutFn). Besides plain row-major:
// - Activations (N, C, H, W): channel-blocked, 8 or 16 channels innermost, so consecutive
//   nodes of a backend that blocks them do not reorder after every op.
// - Convolution weights (O, I, KH, KW): blocked over both channel counts (OIhw8i8o: 8x8 blocks,
//   output channel innermost), so parameters, their gradients and moments can be kept in the
//   layout the kernels use instead of reordering the weights every step.
// Blocked layouts are only used when the blocked dimensions are multiples of the block, so they
// occupy exactly the plain byte size.
enum class Layout : uint8_t { kPlain, kNChw8c, kNChw16c, kOIhw8i8o, kOIhw16i16o };

const char* LayoutName(Layout layout);
// Inverse of LayoutName; false when the name is unknown.
bool ParseLayout(const std::string& name, Layout* layout);
// True when a value of this type may use `layout` (always for kPlain).
bool LayoutEligible(Layout layout, const Shape& shape, DType dtype);

}  // namespace lockstep
