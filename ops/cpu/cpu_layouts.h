#pragma once

// The CPU backend's layouts and its policy for them. Besides plain it registers oneDNN's
// channel-blocked layouts (core/layout.h), which occupy exactly the plain byte size because they
// are only eligible for whole blocks:
// - activations (N, C, H, W) with 8 or 16 channels innermost (nChw8c, nChw16c), so consecutive
//   oneDNN ops do not reorder after every op;
// - convolution weights (O, I, KH, KW) in 8x8 or 16x16 blocks, output channel innermost
//   (OIhw8i8o, OIhw16i16o), so parameters, their gradients and moments stay in the layout the
//   kernels use instead of being reordered every step.
// The native block follows oneDNN's effective ISA (so DNNL_MAX_CPU_ISA caps kernels and layouts
// together): 16 channels when it dispatches to AVX-512 kernels, 8 with AVX2.

#include <vector>

#include "core/layout.h"
#include "graph/kernel.h"

namespace lockstep {
namespace cpu {

// nChw8c or nChw16c, for `block` 8 or 16.
Layout BlockedActivations(int block);
// OIhw8i8o or OIhw16i16o, for `block` 8 or 16.
Layout BlockedWeights(int block);
// Channels per block of an activation layout: 8, 16, or 1 for plain.
int ChannelBlock(Layout layout);
// The weight layouts this CPU's kernels run, most preferred first: the native block, then the
// narrower one (oneDNN's AVX-512 kernels take it through a reorder in their scratch). What the
// backend offers for values every rank holds alike.
std::vector<Layout> WeightLayoutOffer();

}  // namespace cpu

// nChw16c or nChw8c.
Layout NativeBlockedLayout();
// OIhw16i16o or OIhw8i8o.
Layout NativeWeightLayout();
// The native blocked layout for a value that can use it, else plain.
Layout BlockedIfEligible(const Value& value);
// For convolution weights (O, I, KH, KW): the first weight layout of this CPU's offer that the
// job shares and the value can use, else plain.
Layout WeightLayoutIfEligible(const Value& value, const SharedLayouts& shared);
// oneDNN ops: every input and output blocked where eligible, the rest plain.
LayoutChoice BlockedWhereEligible(const Node& node, const std::vector<Layout>& producer_layouts,
                                  const SharedLayouts& shared);

}  // namespace lockstep
