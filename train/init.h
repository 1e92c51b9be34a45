#pragma once

// How parameters and state start. Values come from the counter-based Philox RNG keyed by
// (seed, the parameter's index in creation order), so every rank, device and thread count builds
// identical weights.

#include <cstdint>

#include "core/rng.h"
#include "core/tensor.h"

namespace lockstep::train {

struct Initializer {
  enum class Kind { kConstant, kNormal, kUniform };
  Kind kind = Kind::kConstant;
  double a = 0.0;  // the constant, the normal's mean, or the uniform's low end
  double b = 0.0;  // the normal's standard deviation, or the uniform's high end

  static Initializer Constant(double value) { return {Kind::kConstant, value, 0.0}; }
  static Initializer Normal(double mean, double stddev) { return {Kind::kNormal, mean, stddev}; }
  static Initializer Uniform(double low, double high) { return {Kind::kUniform, low, high}; }
  // He (Kaiming) normal in fan-out mode for ReLU, as torchvision initialises ResNet convs:
  // stddev sqrt(2 / fan_out), fan_out = out_channels * kernel_h * kernel_w.
  static Initializer HeNormal(int64_t fan_out);
  // PyTorch's default for Linear and conv biases: U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  static Initializer FanInUniform(int64_t fan_in);

  // Fills a CPU f32 tensor from `rng`.
  void Fill(const Philox& rng, const Tensor& out) const;
};

}  // namespace lockstep::train
