#pragma once

// Inputs and attributes of the optimizer ops shared by the host tests of ops/optimizer_math.h
// (optimizer_math_test.cc) and the CUDA comparisons (cuda/optimizer_cuda_test.cc).

#include <string>
#include <vector>

#include "tests/testing/grad_check.h"

namespace lockstep::testing {

inline const Shape& OptimizerShape() {
  static const auto* shape = new Shape{64, 3, 3, 3};
  return *shape;
}

// Explicit normal draws, so host tests know the values.
inline GradCheckInput OptimizerInput(const std::string& name, const Shape& shape, uint64_t seed,
                                     InputRole role) {
  return {.name = name, .shape = shape, .role = role, .values = NormalValues(shape, seed)};
}

// (param, grad, moment, lr): the parameter and moment updated in place.
inline std::vector<GradCheckInput> MomentumInputs() {
  return {OptimizerInput("param", OptimizerShape(), 1, InputRole::kParameter),
          OptimizerInput("grad", OptimizerShape(), 2, InputRole::kData),
          OptimizerInput("moment", OptimizerShape(), 3, InputRole::kState),
          {.name = "lr", .shape = {}, .values = {0.05f}}};
}

// ((param, grad, moment) x 3, lr): one node over three tensors of other shapes, one larger than
// a CUDA chunk of 8192 elements, as a bucket's update is.
inline std::vector<GradCheckInput> GroupedMomentumInputs() {
  std::vector<GradCheckInput> inputs;
  const Shape shapes[] = {{64, 3, 3, 3}, {7}, {20000}};
  for (int t = 0; t < 3; ++t) {
    const std::string tag = std::to_string(t);
    inputs.push_back(OptimizerInput("param" + tag, shapes[t], 10 * t + 1, InputRole::kParameter));
    inputs.push_back(OptimizerInput("grad" + tag, shapes[t], 10 * t + 2, InputRole::kData));
    inputs.push_back(OptimizerInput("moment" + tag, shapes[t], 10 * t + 3, InputRole::kState));
  }
  inputs.push_back({.name = "lr", .shape = {}, .values = {0.05f}});
  return inputs;
}

// (accum, grad, beta): the accumulator updated in place.
inline std::vector<GradCheckInput> AccumulateInputs(float beta) {
  return {OptimizerInput("accum", OptimizerShape(), 4, InputRole::kState),
          OptimizerInput("grad", OptimizerShape(), 5, InputRole::kData),
          {.name = "beta", .shape = {}, .values = {beta}}};
}

// Defaults; momentum 0.8 with weight decay, Nesterov and a loss scale; weight decay alone.
inline const std::vector<Attrs>& MomentumConfigs() {
  static const auto* configs = new std::vector<Attrs>{
      {},
      {{"momentum", 0.8}, {"weight_decay", 0.01}, {"nesterov", true}, {"loss_scale", 1024.0}},
      {{"weight_decay", 0.1}, {"loss_scale", 8.0}}};
  return *configs;
}

// (loss_scale, good_steps, finite) for UpdateLossScale.
inline std::vector<GradCheckInput> LossScaleInputs(float scale, int32_t good_steps, bool finite) {
  return {{.name = "scale", .shape = {}, .role = InputRole::kState, .values = {scale}},
          {.name = "good",
           .shape = {},
           .dtype = DType::kI32,
           .differentiable = false,
           .role = InputRole::kState,
           .values = {static_cast<float>(good_steps)}},
          {.name = "finite", .shape = {}, .values = {finite ? 1.0f : 0.0f}}};
}

// Overflow, an ordinary finite step, the end of a window, the floor of 1.
inline const std::vector<std::vector<GradCheckInput>>& LossScaleCases() {
  static const auto* cases = new std::vector<std::vector<GradCheckInput>>{
      LossScaleInputs(65536.0f, 3, false), LossScaleInputs(65536.0f, 3, true),
      LossScaleInputs(65536.0f, 4, true), LossScaleInputs(1.0f, 0, false)};
  return *cases;
}

// UpdateLossScale's attributes for LossScaleCases: factor 2, window 5.
inline const Attrs& LossScaleAttrs() {
  static const auto* attrs = new Attrs{{"factor", 2.0}, {"window", int64_t{5}}};
  return *attrs;
}

}  // namespace lockstep::testing
