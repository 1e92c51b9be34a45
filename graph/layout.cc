#include "graph/layout.h"

namespace lockstep {

const char* LayoutName(Layout layout) {
  return layout == Layout::kPlain ? "plain" : "nChw16c";
}

bool BlockedLayoutEligible(const Shape& shape, DType dtype) {
  return dtype == DType::kF32 && shape.size() == 4 && shape[1] % 16 == 0;
}

}  // namespace lockstep
