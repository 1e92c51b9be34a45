#include "graph/layout.h"

namespace lockstep {
namespace {

constexpr Layout kAllLayouts[] = {Layout::kPlain, Layout::kNChw8c, Layout::kNChw16c,
                                  Layout::kOIhw8i8o, Layout::kOIhw16i16o};

}  // namespace

const char* LayoutName(Layout layout) {
  switch (layout) {
    case Layout::kPlain:
      return "plain";
    case Layout::kNChw8c:
      return "nChw8c";
    case Layout::kNChw16c:
      return "nChw16c";
    case Layout::kOIhw8i8o:
      return "OIhw8i8o";
    case Layout::kOIhw16i16o:
      return "OIhw16i16o";
  }
  return "?";
}

bool ParseLayout(const std::string& name, Layout* layout) {
  for (Layout candidate : kAllLayouts) {
    if (name == LayoutName(candidate)) {
      *layout = candidate;
      return true;
    }
  }
  return false;
}

bool LayoutEligible(Layout layout, const Shape& shape, DType dtype) {
  if (layout == Layout::kPlain) return true;
  if (dtype != DType::kF32 || shape.size() != 4) return false;
  switch (layout) {
    case Layout::kNChw8c:
      return shape[1] % 8 == 0;
    case Layout::kNChw16c:
      return shape[1] % 16 == 0;
    case Layout::kOIhw8i8o:
      return shape[0] % 8 == 0 && shape[1] % 8 == 0;
    case Layout::kOIhw16i16o:
      return shape[0] % 16 == 0 && shape[1] % 16 == 0;
    case Layout::kPlain:
      break;
  }
  return true;
}

}  // namespace lockstep
