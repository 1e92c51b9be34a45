#pragma once

// Reorder: the op every backend with layouts of its own names as its reorder op
// (Backend::reorder_op); its attribute "layout" names the target layout.

#include <functional>
#include <vector>

#include "graph/kernel.h"

namespace lockstep {

// The layouts of a Reorder node, for every backend's Reorder kernel: its producer's layout in,
// the attribute's layout out.
LayoutChoice ReorderLayouts(const Node& node, const std::vector<Layout>& producer_layouts,
                            const SharedLayouts& shared);

// A convolution's layouts, for every backend's Conv2D kernels: its weights, input
// `weights_input` or the output when that is kConvWeightsOut (the filter gradient), in
// `weight_layout`, every other value in `activation_layout`.
inline constexpr int kConvWeightsOut = -1;
using ValueLayoutFn = std::function<Layout(const Value& value)>;
LayoutChoice ConvolutionLayouts(const Node& node, int weights_input,
                                const ValueLayoutFn& weight_layout,
                                const ValueLayoutFn& activation_layout);

}  // namespace lockstep
