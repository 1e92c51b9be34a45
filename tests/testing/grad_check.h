#pragma once

// Numeric gradient checking (as Caffe's GradientChecker): builds a subgraph from `build`,
// seeds every float output y_k with a random dy_k, and compares the compiled backward pass
// against central differences of S = sum_k <dy_k, y_k>, accumulated in float64, for every
// element of every differentiable input. Tolerance is relative to max(|analytic|, |numeric|, 1).

#include <functional>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "graph/pass_config.h"

namespace lockstep::testing {

struct GradCheckInput {
  std::string name;
  Shape shape;
  DType dtype = DType::kF32;
  bool differentiable = true;
  // State for inputs an op updates in place; parameters are stored in the layout their first
  // reader wants (blocked convolution weights).
  InputRole role = InputRole::kData;
  // Explicit values; empty means normal draws with this deviation (i32 inputs must be given).
  std::vector<float> values;
  float stddev = 1.0f;
};

struct GradCheckOptions {
  double step = 1e-2;
  double tolerance = 1e-2;
  uint64_t seed = 1;
  // Keep |x| >= kink away from 0 for ops with a kink there (ReLU).
  double kink = 0.0;
  // Where the graph is compiled and run: the same check holds on every backend.
  Device device = Device::CPU();
  // What the compilation's passes and kernels read (CompileOptions::config), e.g. the
  // communication groups of collective ops.
  PassConfig config;
};

using BuildFn = std::function<std::vector<Value*>(Builder& b, const std::vector<Value*>& inputs)>;

// Adds a gtest failure for every element whose gradients disagree (at most a few per input).
void ExpectGradientsMatch(const std::vector<GradCheckInput>& inputs, const BuildFn& build,
                          const GradCheckOptions& options = {});

// Shorthand for one op applied to the inputs; checks every output of the op.
void ExpectOpGradientsMatch(const std::string& op, const std::vector<GradCheckInput>& inputs,
                            const Attrs& attrs, const GradCheckOptions& options = {});

// Standard normal draws from the project's Philox RNG, reproducible from `seed`.
std::vector<float> NormalValues(const Shape& shape, uint64_t seed);

// Runs `build` forward once on `device` with the given inputs and returns its f32 and i32
// outputs as float vectors (for tests that compare against a reference or another backend).
// Opaque outputs (u8 masks, argmax) are not returned.
std::vector<std::vector<float>> RunForward(const std::vector<GradCheckInput>& inputs,
                                           const BuildFn& build, Device device = Device::CPU(),
                                           const PassConfig& config = {});

}  // namespace lockstep::testing
