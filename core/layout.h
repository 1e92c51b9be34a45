#pragma once

// Memory layouts as ids that backends register. Plain row-major (id 0) always exists; every
// other layout belongs to the backend whose kernels use it (the CPU's channel-blocked layouts,
// say). The graph carries a layout on every value and prints its name in dumps; only the
// backend knows what it means, and the backend reorders between its layouts
// (core/backend.h).

#include <compare>
#include <cstdint>
#include <functional>
#include <string>

#include "core/tensor.h"

namespace lockstep {

struct Layout {
  uint16_t id = 0;

  static const Layout kPlain;
  auto operator<=>(const Layout&) const = default;
};
inline constexpr Layout Layout::kPlain{};

struct LayoutInfo {
  std::string name;  // unique; "plain" is taken
  // Whether a value of this shape and dtype may use the layout.
  std::function<bool(const Shape& shape, DType dtype)> eligible;
  // Bytes a value of this shape and dtype takes in the layout; unset means the plain size
  // (blocked layouts that are only eligible for whole blocks).
  std::function<size_t(const Shape& shape, DType dtype)> bytes;
};

// Called by backends while registering (static initialisation); the name must be new.
Layout RegisterLayout(LayoutInfo info);

const char* LayoutName(Layout layout);
// Inverse of LayoutName; false when no layout of that name is registered.
bool ParseLayout(const std::string& name, Layout* layout);
// True when a value of this type may use `layout` (always for plain).
bool LayoutEligible(Layout layout, const Shape& shape, DType dtype);
size_t LayoutBytes(Layout layout, const Shape& shape, DType dtype);

}  // namespace lockstep
