#pragma once

// Per-element math of the element-wise CUDA kernels, written to give the CPU kernels' results
// bit for bit (tests/ops/cuda/elementwise_cuda_test.cc runs it on the host against them).

#include "ops/cuda/host_device.h"

namespace lockstep::cuda {

// max(x, 0) as std::max(x, 0.0f): NaN and -0 pass through.
LS_HOST_DEVICE inline float Relu(float x) { return x < 0.0f ? 0.0f : x; }

// The gradient passes where the forward input (or output) is positive.
LS_HOST_DEVICE inline float ReluGrad(float x, float dy) { return x > 0.0f ? dy : 0.0f; }

// relu(a + b): a residual connection's sum and ReLU.
LS_HOST_DEVICE inline float AddRelu(float a, float b) { return Relu(a + b); }

// Two gradients meeting at a ReLU's output: their sum where x > 0, +0 elsewhere.
LS_HOST_DEVICE inline float AddReluGrad(float x, float dy1, float dy2) {
  return ReluGrad(x, dy1 + dy2);
}

}  // namespace lockstep::cuda
