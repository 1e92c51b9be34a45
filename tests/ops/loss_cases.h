#pragma once

// Inputs of the loss ops shared by the host tests of ops/loss_math.h (loss_math_test.cc) and the
// CUDA comparisons (cuda/loss_cuda_test.cc).

#include <utility>
#include <vector>

#include "core/rng.h"
#include "tests/testing/grad_check.h"

namespace lockstep::testing {

// logits (rows, classes) with explicit draws and in-range i32 labels (rows).
inline std::vector<GradCheckInput> LossInputs(int64_t rows, int64_t classes, float stddev = 2.0f) {
  std::vector<float> logits(rows * classes), labels(rows);
  Philox(11, 0).Normal(logits.data(), logits.size(), 0.0f, stddev);
  for (int64_t i = 0; i < rows; ++i) labels[i] = static_cast<float>((i * 7 + 3) % classes);
  return {{.name = "logits", .shape = {rows, classes}, .values = std::move(logits)},
          {.name = "labels",
           .shape = {rows},
           .dtype = DType::kI32,
           .differentiable = false,
           .values = std::move(labels)}};
}

// SoftmaxCrossEntropyGrad's inputs: probabilities (any values do), labels and dloss.
inline std::vector<GradCheckInput> LossGradInputs(int64_t rows, int64_t classes) {
  std::vector<GradCheckInput> in = LossInputs(rows, classes);
  in[0].name = "probs";
  in.push_back({.name = "dloss", .shape = {}, .values = {0.75f}});
  return in;
}

}  // namespace lockstep::testing
