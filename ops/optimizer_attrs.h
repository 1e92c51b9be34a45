#pragma once

// The attributes of the optimizer nodes (ops/optimizer.cc), read once, when a kernel is built,
// the same way on every backend.

#include <cstdint>

#include "graph/graph.h"
#include "ops/optimizer_math.h"

namespace lockstep {

// A Momentum node's hyperparameters; unscale is 1 / its loss_scale attribute.
inline math::MomentumParams MomentumParamsOf(const Node& node) {
  return {.momentum = static_cast<float>(node.attrs.GetFloat("momentum")),
          .weight_decay = static_cast<float>(node.attrs.GetFloat("weight_decay")),
          .unscale = static_cast<float>(1.0 / node.attrs.GetFloat("loss_scale")),
          .nesterov = node.attrs.GetBool("nesterov")};
}

// An UpdateLossScale node's rule (math::LossScaleStep): the factor the scale moves by, and the
// good steps after which it grows.
struct LossScaleRule {
  float factor;
  int32_t window;
};
inline LossScaleRule LossScaleRuleOf(const Node& node) {
  return {.factor = static_cast<float>(node.attrs.GetFloat("factor")),
          .window = static_cast<int32_t>(node.attrs.GetInt("window"))};
}

}  // namespace lockstep
