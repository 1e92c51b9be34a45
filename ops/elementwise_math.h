#pragma once

// Per-element math of the element-wise kernels (ops/cpu/elementwise.cc, ops/cuda/elementwise.cu),
// so both backends give the same bits.

#include <cstdint>
#include <cstring>

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

}  // namespace lockstep::math
