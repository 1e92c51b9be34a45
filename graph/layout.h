#pragma once

#include "absl/strings/string_view.h"

#include "core/tensor.h"

namespace lockstep {

// Memory layout of a 4-D activation. kNChw16c is oneDNN's channel-blocked layout (16 channels
// innermost), kept between consecutive oneDNN nodes so they do not reorder after every op.
// Blocked layouts are only used when C % 16 == 0, so they occupy exactly the plain byte size.
enum class Layout : uint8_t { kPlain, kNChw16c };

const char* LayoutName(Layout layout);
// True when a value of this type may use a blocked layout.
bool BlockedLayoutEligible(const Shape& shape, DType dtype);

}  // namespace lockstep
