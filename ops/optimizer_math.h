#pragma once

// Per-element math of the optimizer kernels (ops/cpu/optimizer.cc, ops/cuda/optimizer.cu), so
// both backends update parameters, moments and the loss scale alike.

#include <cfloat>
#include <cstddef>
#include <cstdint>

#include "ops/host_device.h"

namespace lockstep::math {

// A Momentum node's attributes, as floats.
struct MomentumParams {
  float momentum = 0.9f;
  float weight_decay = 0.0f;
  float unscale = 1.0f;  // 1 / loss_scale
  bool nesterov = false;
};

// Where a Momentum node's inputs are (ops/optimizer.cc): (param, grad, moment) for each of its
// tensors, then lr and, under dynamic loss scaling, loss_scale and finite. Output 2t is tensor
// t's param, 2t + 1 its moment.
struct MomentumInputs {
  explicit MomentumInputs(size_t inputs)
      : dynamic(inputs % 3 == 0), tensors((inputs - (dynamic ? 3 : 1)) / 3) {}
  size_t param(size_t t) const { return 3 * t; }
  size_t grad(size_t t) const { return 3 * t + 1; }
  size_t moment(size_t t) const { return 3 * t + 2; }
  size_t lr() const { return 3 * tensors; }
  size_t loss_scale() const { return 3 * tensors + 1; }
  size_t finite() const { return 3 * tensors + 2; }

  bool dynamic;
  size_t tensors;
};

struct ParamAndMoment {
  float param;
  float moment;
};

// g = grad / loss_scale + weight_decay * param; moment' = momentum * moment + g;
// param' = param - lr * (nesterov ? g + momentum * moment' : moment').
LS_HOST_DEVICE inline ParamAndMoment MomentumStep(const MomentumParams& p, float lr, float param,
                                                  float grad, float moment) {
  const float g = grad * p.unscale + p.weight_decay * param;
  const float m = p.momentum * moment + g;
  return {param - lr * (p.nesterov ? g + p.momentum * m : m), m};
}

// The unscale of a Momentum step under dynamic loss scaling: 1 / scale is a power of two, so
// the product is exact and the update does not depend on the scale.
LS_HOST_DEVICE inline float DynamicUnscale(float attribute_unscale, float loss_scale) {
  return attribute_unscale * (1.0f / loss_scale);
}

struct LossScaleState {
  float scale;
  int32_t good_steps;
};

// UpdateLossScale: on overflow the scale is divided by factor (not below 1) and the good steps
// restart; after `window` good steps the scale is multiplied by factor (while that is finite).
LS_HOST_DEVICE inline LossScaleState LossScaleStep(LossScaleState state, bool finite, float factor,
                                                   int32_t window) {
  if (!finite) return {state.scale / factor > 1.0f ? state.scale / factor : 1.0f, 0};
  if (state.good_steps + 1 < window) return {state.scale, state.good_steps + 1};
  return {state.scale * factor <= FLT_MAX ? state.scale * factor : state.scale, 0};
}

// accum' = beta * accum + grad: beta 0 starts the accumulation over, 1 adds to it. Starting over
// ignores accum rather than multiplying it by 0: after a step skipped for an overflow (dynamic
// loss scaling) it holds inf, and 0 * inf would poison every later accumulation with NaN.
LS_HOST_DEVICE inline float AccumulateStep(float beta, float accum, float grad) {
  return beta == 0.0f ? grad : beta * accum + grad;
}

}  // namespace lockstep::math
