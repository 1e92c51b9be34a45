#include "graph/layout.h"

namespace lockstep {

const char* LayoutName(Layout layout) {
  switch (layout) {
    case Layout::kPlain:
      return "plain";
    case Layout::kNChw8c:
      return "nChw8c";
    case Layout::kNChw16c:
      return "nChw16c";
  }
  return "?";
}

bool ParseLayout(const std::string& name, Layout* layout) {
  for (Layout candidate : {Layout::kPlain, Layout::kNChw8c, Layout::kNChw16c}) {
    if (name == LayoutName(candidate)) {
      *layout = candidate;
      return true;
    }
  }
  return false;
}

Layout NativeBlockedLayout() {
  // The same features oneDNN requires for its avx512_core kernels.
  static const Layout layout =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
              __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")
          ? Layout::kNChw16c
          : Layout::kNChw8c;
  return layout;
}

bool BlockedLayoutEligible(const Shape& shape, DType dtype) {
  const int64_t block = NativeBlockedLayout() == Layout::kNChw16c ? 16 : 8;
  return dtype == DType::kF32 && shape.size() == 4 && shape[1] % block == 0;
}

}  // namespace lockstep
