#pragma once

#include "core/tensor.h"

namespace lockstep {

// Memory layout of a 4-D activation. The blocked layouts are oneDNN's channel-blocked ones
// (8 or 16 channels innermost), kept between consecutive oneDNN nodes so they do not reorder
// after every op. Which one is native depends on the CPU: nChw16c with AVX-512, nChw8c with
// AVX2. Blocked layouts are only used when C is a multiple of the block, so they occupy exactly
// the plain byte size.
enum class Layout : uint8_t { kPlain, kNChw8c, kNChw16c };

const char* LayoutName(Layout layout);
// Inverse of LayoutName; false when the name is unknown.
bool ParseLayout(const std::string& name, Layout* layout);
// The blocked layout oneDNN's kernels prefer on this CPU.
Layout NativeBlockedLayout();
// True when a value of this type may use NativeBlockedLayout().
bool BlockedLayoutEligible(const Shape& shape, DType dtype);

}  // namespace lockstep
