#pragma once

// The CPU backend's layout policy: which of the blocked layouts its oneDNN kernels want. The
// native block follows oneDNN's effective ISA (so DNNL_MAX_CPU_ISA caps kernels and layouts
// together): 16 channels when it dispatches to AVX-512 kernels, 8 with AVX2.

#include <vector>

#include "graph/kernel.h"
#include "graph/layout.h"

namespace lockstep {

// nChw16c or nChw8c.
Layout NativeBlockedLayout();
// OIhw16i16o or OIhw8i8o.
Layout NativeWeightLayout();
// The native blocked layout for a value that can use it, else plain.
Layout BlockedIfEligible(const Value& value);
// NativeWeightLayout() for convolution weights (O, I, KH, KW) that can use it, else plain.
Layout WeightLayoutIfEligible(const Value& value);
// oneDNN ops: every input and output blocked where eligible, the rest plain.
LayoutChoice BlockedWhereEligible(const Node& node, const std::vector<Layout>& producer_layouts);

}  // namespace lockstep
