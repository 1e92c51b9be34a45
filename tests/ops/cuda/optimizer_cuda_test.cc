// The optimizer CUDA kernels against their CPU twins (skipped without a GPU).

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "tests/ops/optimizer_cases.h"
#include "tests/testing/backend_compare.h"

namespace lockstep {
namespace {

using testing::GradCheckInput;
using testing::OptimizerInput;

TEST(OptimizerCudaTest, Momentum) {
  LS_SKIP_WITHOUT_GPU();
  for (const Attrs& attrs : testing::MomentumConfigs()) {
    SCOPED_TRACE(attrs.ToString());
    testing::ExpectCudaOpMatchesCpu("Momentum", testing::MomentumInputs(), attrs, 1e-5);
  }
}

// Momentum's inputs with the dynamic loss scale's (loss_scale, finite) appended.
std::vector<GradCheckInput> DynamicMomentumInputs(float finite) {
  std::vector<GradCheckInput> inputs = testing::MomentumInputs();
  inputs.push_back({.name = "loss_scale", .shape = {}, .values = {1024.0f}});
  inputs.push_back({.name = "finite", .shape = {}, .values = {finite}});
  return inputs;
}

TEST(OptimizerCudaTest, MomentumUnderDynamicLossScale) {
  LS_SKIP_WITHOUT_GPU();
  for (float finite : {1.0f, 0.0f}) {
    testing::ExpectCudaOpMatchesCpu("Momentum", DynamicMomentumInputs(finite),
                                    testing::MomentumConfigs()[1], 1e-5);
  }
}

// Two tensors, the second with `bad` at one element.
std::vector<GradCheckInput> AllFiniteInputs(float bad) {
  std::vector<GradCheckInput> inputs = {
      OptimizerInput("a", testing::OptimizerShape(), 6, InputRole::kData),
      OptimizerInput("b", {1000}, 7, InputRole::kData)};
  inputs[1].values[333] = bad;
  return inputs;
}

TEST(OptimizerCudaTest, AllFinite) {
  LS_SKIP_WITHOUT_GPU();
  for (float bad :
       {0.5f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    testing::ExpectCudaOpMatchesCpu("AllFinite", AllFiniteInputs(bad), {}, 0.0);
  }
}

TEST(OptimizerCudaTest, UpdateLossScale) {
  LS_SKIP_WITHOUT_GPU();
  for (const std::vector<GradCheckInput>& inputs : testing::LossScaleCases()) {
    testing::ExpectCudaOpMatchesCpu("UpdateLossScale", inputs, testing::LossScaleAttrs(), 0.0);
  }
}

TEST(OptimizerCudaTest, Accumulate) {
  LS_SKIP_WITHOUT_GPU();
  testing::ExpectCudaOpMatchesCpu("Accumulate", testing::AccumulateInputs(0.0f), {}, 1e-6);
  testing::ExpectCudaOpMatchesCpu("Accumulate", testing::AccumulateInputs(1.0f), {}, 1e-6);
}

}  // namespace
}  // namespace lockstep
