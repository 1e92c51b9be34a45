// The update math of ops/optimizer_math.h, which the CPU and CUDA optimizer kernels share, on the
// host against the CPU kernels.

#include "ops/optimizer_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/ops/optimizer_cases.h"

namespace lockstep {
namespace {

using testing::GradCheckInput;

math::MomentumParams ParamsOf(const Attrs& attrs) {
  const auto get = [&](const char* name, double fallback) {
    return attrs.Has(name) ? attrs.GetFloat(name) : fallback;
  };
  return {.momentum = static_cast<float>(get("momentum", 0.9)),
          .weight_decay = static_cast<float>(get("weight_decay", 0.0)),
          .unscale = static_cast<float>(1.0 / get("loss_scale", 1.0)),
          .nesterov = attrs.Has("nesterov") && attrs.GetBool("nesterov")};
}

TEST(OptimizerMathTest, MomentumStepMatchesCpuKernel) {
  const std::vector<GradCheckInput> in = testing::MomentumInputs();
  for (const Attrs& attrs : testing::MomentumConfigs()) {
    SCOPED_TRACE(attrs.ToString());
    const auto cpu = testing::RunForward(in, [&](Builder& b, const std::vector<Value*>& values) {
      return b.Op("Momentum", values, attrs);
    });
    ASSERT_EQ(cpu.size(), 2u);
    const math::MomentumParams params = ParamsOf(attrs);
    for (size_t i = 0; i < in[0].values.size(); ++i) {
      const math::ParamAndMoment next = math::MomentumStep(params, in[3].values[0], in[0].values[i],
                                                           in[1].values[i], in[2].values[i]);
      EXPECT_FLOAT_EQ(next.param, cpu[0][i]) << i;
      EXPECT_FLOAT_EQ(next.moment, cpu[1][i]) << i;
    }
  }
}

// One node over three tensors updates each as MomentumStep does, with the shared lr.
TEST(OptimizerMathTest, GroupedMomentumUpdatesEachTensorAlike) {
  const std::vector<GradCheckInput> in = testing::GroupedMomentumInputs();
  const Attrs& attrs = testing::MomentumConfigs()[1];
  const auto cpu = testing::RunForward(in, [&](Builder& b, const std::vector<Value*>& values) {
    return b.Op("Momentum", values, attrs);
  });
  ASSERT_EQ(cpu.size(), 6u);
  const math::MomentumInputs where(in.size());
  ASSERT_EQ(where.tensors, 3u);
  const float lr = in[where.lr()].values[0];
  for (size_t t = 0; t < where.tensors; ++t) {
    const std::vector<float>& param = in[where.param(t)].values;
    for (size_t i = 0; i < param.size(); ++i) {
      const math::ParamAndMoment next =
          math::MomentumStep(ParamsOf(attrs), lr, param[i], in[where.grad(t)].values[i],
                             in[where.moment(t)].values[i]);
      ASSERT_EQ(next.param, cpu[2 * t][i]) << "tensor " << t << ", element " << i;
      ASSERT_EQ(next.moment, cpu[2 * t + 1][i]) << "tensor " << t << ", element " << i;
    }
  }
}

TEST(OptimizerMathTest, LossScaleStepMatchesCpuKernel) {
  for (const std::vector<GradCheckInput>& in : testing::LossScaleCases()) {
    const auto cpu = testing::RunForward(in, [](Builder& b, const std::vector<Value*>& values) {
      return b.Op("UpdateLossScale", values, testing::LossScaleAttrs());
    });
    ASSERT_EQ(cpu.size(), 2u);
    const math::LossScaleState next = math::LossScaleStep(
        {in[0].values[0], static_cast<int32_t>(in[1].values[0])}, in[2].values[0] != 0.0f, 2.0f, 5);
    EXPECT_EQ(next.scale, cpu[0][0]);
    EXPECT_EQ(static_cast<float>(next.good_steps), cpu[1][0]);
  }
}

TEST(OptimizerMathTest, DynamicUnscaleIsExactForPowersOfTwo) {
  const float unscale = 1.0f / 3.0f;
  for (float scale : {1.0f, 1024.0f, 16777216.0f}) {
    EXPECT_EQ(math::DynamicUnscale(unscale, scale) * scale, unscale) << scale;
  }
}

TEST(OptimizerMathTest, AccumulateStepMatchesCpuKernel) {
  for (float beta : {0.0f, 1.0f}) {
    const std::vector<GradCheckInput> in = testing::AccumulateInputs(beta);
    const auto cpu = testing::RunForward(in, [](Builder& b, const std::vector<Value*>& values) {
      return b.Op("Accumulate", values);
    });
    ASSERT_EQ(cpu.size(), 1u);
    for (size_t i = 0; i < in[0].values.size(); ++i) {
      EXPECT_EQ(math::AccumulateStep(beta, in[0].values[i], in[1].values[i]), cpu[0][i]) << i;
    }
  }
}

// A gradient that overflowed before an update (the step is skipped) leaves inf in the
// accumulator; starting over must not turn it into NaN.
TEST(OptimizerMathTest, AccumulateStepStartsOverFromANonFiniteAccumulator) {
  for (float accum : {INFINITY, -INFINITY, NAN}) {
    EXPECT_EQ(math::AccumulateStep(0.0f, accum, 0.5f), 0.5f) << accum;
  }
  EXPECT_TRUE(std::isinf(math::AccumulateStep(1.0f, INFINITY, 0.5f)));
}

}  // namespace
}  // namespace lockstep
