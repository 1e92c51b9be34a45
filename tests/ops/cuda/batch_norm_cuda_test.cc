// Batch normalization on CUDA (cuDNN plus the variance conversions) against the CPU kernels:
// training statistics, running averages, inference, gradients, and the fused ReLU pair.

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tests/ops/cuda/batch_norm_relu_pair.h"
#include "tests/testing/backend_compare.h"

namespace lockstep {
namespace {

using testing::BatchNormReluPair;
using testing::ExpectCudaMatchesCpu;
using testing::ExpectCudaOpMatchesCpu;
using testing::GradCheckInput;
using testing::NormalValues;

// A (C) vector of positive values around `shift` (variances) or any sign (shift 0).
GradCheckInput Channels(const std::string& name, int64_t c, float shift, uint64_t seed) {
  std::vector<float> values = NormalValues({c}, seed);
  for (float& v : values) v = shift + (shift > 0 ? 0.3f * std::abs(v) : v);
  return {.name = name, .shape = {c}, .values = values};
}

// The running statistics are state: BatchNorm updates them in place, which the graph allows
// only for persistent values.
GradCheckInput RunningStat(const std::string& name, int64_t c, float shift, uint64_t seed) {
  GradCheckInput input = Channels(name, c, shift, seed);
  input.differentiable = false;
  input.role = InputRole::kState;
  return input;
}

std::vector<GradCheckInput> ForwardInputs(const Shape& x) {
  const int64_t c = x[1];
  return {{.name = "x", .shape = x, .stddev = 2.0f},
          Channels("gamma", c, 0.0f, 1),
          Channels("beta", c, 0.0f, 2),
          RunningStat("mean", c, 0.0f, 3),
          RunningStat("var", c, 1.0f, 4)};
}

std::vector<GradCheckInput> GradInputs(const Shape& x) {
  const int64_t c = x[1];
  return {{.name = "x", .shape = x, .stddev = 2.0f},
          Channels("gamma", c, 0.0f, 1),
          Channels("saved_mean", c, 0.0f, 3),
          Channels("saved_var", c, 1.0f, 4),
          {.name = "dy", .shape = x}};
}

TEST(BatchNormCudaTest, TrainingStatisticsAndRunningAverages) {
  LS_SKIP_WITHOUT_GPU();
  ExpectCudaOpMatchesCpu("BatchNorm", ForwardInputs({4, 8, 6, 6}), {{"momentum", 0.9}});
  ExpectCudaOpMatchesCpu("BatchNorm", ForwardInputs({16, 5}));
}

TEST(BatchNormCudaTest, InferenceAndGradient) {
  LS_SKIP_WITHOUT_GPU();
  ExpectCudaOpMatchesCpu("BatchNormInference", ForwardInputs({4, 8, 6, 6}));
  ExpectCudaOpMatchesCpu("BatchNormGrad", GradInputs({4, 8, 6, 6}));
}

// The fused pair only exists together: the forward's mask is the backward's input.
TEST(BatchNormCudaTest, FusedReluPair) {
  LS_SKIP_WITHOUT_GPU();
  std::vector<GradCheckInput> inputs = ForwardInputs({4, 8, 5, 5});
  inputs.push_back({.name = "dy", .shape = {4, 8, 5, 5}});
  ExpectCudaMatchesCpu(inputs, BatchNormReluPair);
}

}  // namespace
}  // namespace lockstep
