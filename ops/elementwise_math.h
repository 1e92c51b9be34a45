#pragma once

// Per-element math of the element-wise kernels, so every backend gives the same bits: a function
// per formula, and a functor per op that the backends' generic loops take (ops/cpu/pointwise.h,
// ops/cuda/pointwise.cuh). A functor maps float inputs to a float output whatever the element
// type; the loop loads each element to float and rounds the result once.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "ops/host_device.h"

namespace lockstep::math {

// max(x, 0) as std::max(x, 0.0f): NaN and -0 pass through.
LS_HOST_DEVICE inline float Relu(float x) { return x < 0.0f ? 0.0f : x; }

// relu(a + b): a residual connection's sum and ReLU.
LS_HOST_DEVICE inline float AddRelu(float a, float b) { return Relu(a + b); }

// The gradient passes where the forward input (or output) is positive, +0 elsewhere. Masking dy's
// bits instead of selecting it keeps the CPU loop vectorized when dy is a sum: GCC may not
// speculate an add that could trap, so a select of it would branch.
LS_HOST_DEVICE inline float ReluGrad(float x, float dy) {
  uint32_t bits;
  memcpy(&bits, &dy, sizeof(bits));
  bits &= x > 0.0f ? ~0u : 0u;
  memcpy(&dy, &bits, sizeof(bits));
  return dy;
}

// Two gradients meeting at a ReLU's output: their sum where x > 0, +0 elsewhere.
LS_HOST_DEVICE inline float AddReluGrad(float x, float dy1, float dy2) {
  return ReluGrad(x, dy1 + dy2);
}

// The functors of the element-wise ops.
struct AddOp {
  LS_HOST_DEVICE float operator()(float a, float b) const { return a + b; }
};
struct AddReluOp {
  LS_HOST_DEVICE float operator()(float a, float b) const { return AddRelu(a, b); }
};
struct ReluOp {
  LS_HOST_DEVICE float operator()(float x) const { return Relu(x); }
};
struct ReluGradOp {
  LS_HOST_DEVICE float operator()(float x, float dy) const { return ReluGrad(x, dy); }
};
// An op's attribute is the functor's state.
struct ScaleOp {
  float scale;
  LS_HOST_DEVICE float operator()(float x) const { return scale * x; }
};

// A float kept as it is: the rounding of an intermediate where the element type is float.
struct KeepFloat {
  LS_HOST_DEVICE float operator()(float x) const { return x; }
};

// `round` takes the sum to the element type and back where the CPU loop passes it (the same bits:
// the mask passes the sum or +0). There, rounding the masked sum instead would let GCC move the
// add under the mask's branch, where it may not speculate it, and the loop would not vectorize.
struct AddReluGradOp {
  template <typename Round = KeepFloat>
  LS_HOST_DEVICE float operator()(float x, float dy1, float dy2, Round round = {}) const {
    return ReluGrad(x, round(dy1 + dy2));
  }
};

template <typename Op, typename Indices>
struct CallableWithFloats;
template <typename Op, size_t... I>
struct CallableWithFloats<Op, std::index_sequence<I...>>
    : std::is_invocable<const Op&, decltype(static_cast<float>(I))...> {};

// The number of float inputs a functor takes: the fewest it can be called with.
template <typename Op, size_t kTried = 0>
constexpr size_t InputsOf() {
  if constexpr (CallableWithFloats<Op, std::make_index_sequence<kTried>>::value) {
    return kTried;
  } else if constexpr (kTried < 8) {
    return InputsOf<Op, kTried + 1>();
  } else {
    static_assert(kTried < 8, "an element-wise functor takes floats and returns a float");
  }
}

}  // namespace lockstep::math
