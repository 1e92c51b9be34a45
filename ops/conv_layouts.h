#pragma once

// A convolution's layouts, for every backend's Conv2D kernels (ops/conv.cc defines the ops): its
// weights, input `weights_input` or the output when that is kConvWeightsOut (the filter
// gradient), in `weight_layout`, every other value in `activation_layout`.

#include <functional>

#include "graph/kernel.h"

namespace lockstep {

inline constexpr int kConvWeightsOut = -1;
using ValueLayoutFn = std::function<Layout(const Value& value)>;
LayoutChoice ConvolutionLayouts(const Node& node, int weights_input,
                                const ValueLayoutFn& weight_layout,
                                const ValueLayoutFn& activation_layout);

}  // namespace lockstep
