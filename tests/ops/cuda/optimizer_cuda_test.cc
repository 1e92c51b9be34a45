// The optimizer CUDA kernels against their CPU twins (skipped without a GPU), and the update
// math of ops/cuda/optimizer_math.h on the host against the CPU kernels (runs everywhere).

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "ops/cuda/optimizer_math.h"
#include "tests/testing/backend_compare.h"

namespace lockstep {
namespace {

using testing::GradCheckInput;

const Shape kShape = {64, 3, 3, 3};

GradCheckInput Given(const std::string& name, const Shape& shape, uint64_t seed, InputRole role) {
  return {.name = name, .shape = shape, .role = role, .values = testing::NormalValues(shape, seed)};
}

// (param, grad, moment, lr): the parameter and moment updated in place.
std::vector<GradCheckInput> MomentumInputs() {
  return {Given("param", kShape, 1, InputRole::kParameter),
          Given("grad", kShape, 2, InputRole::kData),
          Given("moment", kShape, 3, InputRole::kState),
          {.name = "lr", .shape = {}, .values = {0.05f}}};
}

// (accum, grad, beta): the accumulator updated in place.
std::vector<GradCheckInput> AccumulateInputs(float beta) {
  return {Given("accum", kShape, 4, InputRole::kState),
          Given("grad", kShape, 5, InputRole::kData),
          {.name = "beta", .shape = {}, .values = {beta}}};
}

const std::vector<Attrs>& MomentumConfigs() {
  static const auto* configs = new std::vector<Attrs>{
      {},
      {{"momentum", 0.8}, {"weight_decay", 0.01}, {"nesterov", true}, {"loss_scale", 1024.0}},
      {{"weight_decay", 0.1}, {"loss_scale", 8.0}}};
  return *configs;
}

TEST(OptimizerCudaTest, Momentum) {
  LS_SKIP_WITHOUT_GPU();
  for (const Attrs& attrs : MomentumConfigs()) {
    SCOPED_TRACE(attrs.ToString());
    testing::ExpectCudaOpMatchesCpu("Momentum", MomentumInputs(), attrs, 1e-5);
  }
}

// Momentum's inputs with the dynamic loss scale's (loss_scale, finite) appended.
std::vector<GradCheckInput> DynamicMomentumInputs(float finite) {
  std::vector<GradCheckInput> inputs = MomentumInputs();
  inputs.push_back({.name = "loss_scale", .shape = {}, .values = {1024.0f}});
  inputs.push_back({.name = "finite", .shape = {}, .values = {finite}});
  return inputs;
}

TEST(OptimizerCudaTest, MomentumUnderDynamicLossScale) {
  LS_SKIP_WITHOUT_GPU();
  for (float finite : {1.0f, 0.0f}) {
    testing::ExpectCudaOpMatchesCpu("Momentum", DynamicMomentumInputs(finite),
                                    MomentumConfigs()[1], 1e-5);
  }
}

// Two tensors, the second with `bad` at one element.
std::vector<GradCheckInput> AllFiniteInputs(float bad) {
  std::vector<GradCheckInput> inputs = {Given("a", kShape, 6, InputRole::kData),
                                        Given("b", {1000}, 7, InputRole::kData)};
  inputs[1].values[333] = bad;
  return inputs;
}

TEST(OptimizerCudaTest, AllFinite) {
  LS_SKIP_WITHOUT_GPU();
  for (float bad : {0.5f, std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN()}) {
    testing::ExpectCudaOpMatchesCpu("AllFinite", AllFiniteInputs(bad), {}, 0.0);
  }
}

// (loss_scale, good_steps, finite) for UpdateLossScale.
std::vector<GradCheckInput> LossScaleInputs(float scale, int32_t good_steps, bool finite) {
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
const std::vector<std::vector<GradCheckInput>>& LossScaleCases() {
  static const auto* cases = new std::vector<std::vector<GradCheckInput>>{
      LossScaleInputs(65536.0f, 3, false), LossScaleInputs(65536.0f, 3, true),
      LossScaleInputs(65536.0f, 4, true), LossScaleInputs(1.0f, 0, false)};
  return *cases;
}
const Attrs kLossScaleAttrs = {{"factor", 2.0}, {"window", int64_t{5}}};

TEST(OptimizerCudaTest, UpdateLossScale) {
  LS_SKIP_WITHOUT_GPU();
  for (const std::vector<GradCheckInput>& inputs : LossScaleCases()) {
    testing::ExpectCudaOpMatchesCpu("UpdateLossScale", inputs, kLossScaleAttrs, 0.0);
  }
}

TEST(OptimizerCudaTest, Accumulate) {
  LS_SKIP_WITHOUT_GPU();
  testing::ExpectCudaOpMatchesCpu("Accumulate", AccumulateInputs(0.0f), {}, 1e-6);
  testing::ExpectCudaOpMatchesCpu("Accumulate", AccumulateInputs(1.0f), {}, 1e-6);
}

cuda::MomentumParams ParamsOf(const Attrs& attrs) {
  const auto get = [&](const char* name, double fallback) {
    return attrs.Has(name) ? attrs.GetFloat(name) : fallback;
  };
  return {.momentum = static_cast<float>(get("momentum", 0.9)),
          .weight_decay = static_cast<float>(get("weight_decay", 0.0)),
          .unscale = static_cast<float>(1.0 / get("loss_scale", 1.0)),
          .nesterov = attrs.Has("nesterov") && attrs.GetBool("nesterov")};
}

TEST(OptimizerMathTest, MomentumStepMatchesCpuKernel) {
  const std::vector<GradCheckInput> in = MomentumInputs();
  for (const Attrs& attrs : MomentumConfigs()) {
    SCOPED_TRACE(attrs.ToString());
    const auto cpu = testing::RunForward(in, [&](Builder& b, const std::vector<Value*>& values) {
      return b.Op("Momentum", values, attrs);
    });
    ASSERT_EQ(cpu.size(), 2u);
    const cuda::MomentumParams params = ParamsOf(attrs);
    for (size_t i = 0; i < in[0].values.size(); ++i) {
      const cuda::ParamAndMoment next = cuda::MomentumStep(params, in[3].values[0], in[0].values[i],
                                                           in[1].values[i], in[2].values[i]);
      EXPECT_FLOAT_EQ(next.param, cpu[0][i]) << i;
      EXPECT_FLOAT_EQ(next.moment, cpu[1][i]) << i;
    }
  }
}

TEST(OptimizerMathTest, LossScaleStepMatchesCpuKernel) {
  for (const std::vector<GradCheckInput>& in : LossScaleCases()) {
    const auto cpu = testing::RunForward(in, [](Builder& b, const std::vector<Value*>& values) {
      return b.Op("UpdateLossScale", values, kLossScaleAttrs);
    });
    ASSERT_EQ(cpu.size(), 2u);
    const cuda::LossScaleState next =
        cuda::LossScaleStep({in[0].values[0], static_cast<int32_t>(in[1].values[0])},
                            in[2].values[0] != 0.0f, 2.0f, 5);
    EXPECT_EQ(next.scale, cpu[0][0]);
    EXPECT_EQ(static_cast<float>(next.good_steps), cpu[1][0]);
  }
}

TEST(OptimizerMathTest, DynamicUnscaleIsExactForPowersOfTwo) {
  const float unscale = 1.0f / 3.0f;
  for (float scale : {1.0f, 1024.0f, 16777216.0f}) {
    EXPECT_EQ(cuda::DynamicUnscale(unscale, scale) * scale, unscale) << scale;
  }
}

TEST(OptimizerMathTest, AccumulateStepMatchesCpuKernel) {
  for (float beta : {0.0f, 1.0f}) {
    const std::vector<GradCheckInput> in = AccumulateInputs(beta);
    const auto cpu = testing::RunForward(in, [](Builder& b, const std::vector<Value*>& values) {
      return b.Op("Accumulate", values);
    });
    ASSERT_EQ(cpu.size(), 1u);
    for (size_t i = 0; i < in[0].values.size(); ++i) {
      EXPECT_EQ(cuda::AccumulateStep(beta, in[0].values[i], in[1].values[i]), cpu[0][i]) << i;
    }
  }
}

}  // namespace
}  // namespace lockstep
