// The math of ops/batch_norm_math.h that the CUDA batch norm runs around cuDNN and the CPU's own
// bf16 and f16 loops run: the conversions between cuDNN's saved inverse standard deviation and the
// ops' variance, the fused ReLU's mask as oneDNN's, the variance from sums, the running average
// and the input gradient.

#include "ops/batch_norm_math.h"

#include <gtest/gtest.h>

#include <cmath>

namespace lockstep {
namespace {

TEST(BatchNormMathTest, VarianceRoundTripsThroughInvStd) {
  for (float var : {1e-3f, 0.5f, 1.0f, 7.25f, 300.0f}) {
    for (float epsilon : {1e-5f, 1e-3f}) {
      const float inv_std = math::InvStdFromVariance(var, epsilon);
      EXPECT_NEAR(inv_std, 1.0 / std::sqrt(static_cast<double>(var) + epsilon), 1e-6 * inv_std);
      EXPECT_NEAR(math::VarianceFromInvStd(inv_std, epsilon), var, 1e-5 * (var + 1.0f));
    }
  }
}

TEST(BatchNormMathTest, ReluMaskKeepsPositivesAndNaN) {
  EXPECT_EQ(math::ReluMask(2.5f), 1);
  EXPECT_EQ(math::ReluMask(0.0f), 0);
  EXPECT_EQ(math::ReluMask(-0.0f), 0);
  EXPECT_EQ(math::ReluMask(-1.0f), 0);
  EXPECT_EQ(math::ReluMask(std::nanf("")), 1);  // as oneDNN: only values <= 0 are cut
  EXPECT_EQ(math::Masked(3.0f, 1), 3.0f);
  EXPECT_EQ(math::Masked(3.0f, 0), 0.0f);
  EXPECT_TRUE(std::isnan(math::Masked(std::nanf(""), math::ReluMask(std::nanf("")))));
}

// Values 1000 + {-1, 0, 1}: the difference of the means keeps the variance, 2/3.
TEST(BatchNormMathTest, BiasedVarianceFromSums) {
  EXPECT_NEAR(math::BiasedVariance(3000.0, 999.0 * 999 + 1000.0 * 1000 + 1001.0 * 1001, 3.0),
              2.0 / 3.0, 1e-6);
  EXPECT_EQ(math::BiasedVariance(3.0, 3.0 - 1e-9, 3.0), 0.0f);  // rounding below zero clamps
}

TEST(BatchNormMathTest, RunningAverageKeepsMomentumOfTheOld) {
  EXPECT_FLOAT_EQ(math::RunningAverage(10.0f, 0.0f, 0.9f), 9.0f);
  EXPECT_FLOAT_EQ(math::RunningAverage(0.0f, 10.0f, 0.9f), 1.0f);
}

// dx = gamma * inv_std * (dy - mean(dy) - x_hat * mean(dy * x_hat)).
TEST(BatchNormMathTest, NormInputGrad) {
  EXPECT_FLOAT_EQ(math::NormInputGrad(1.0f, 0.5f, 2.0f, 0.25f, 0.5f),
                  2.0f * (1.0f - 0.25f - 0.25f));
  EXPECT_FLOAT_EQ(math::NormInputGrad(0.25f, 0.0f, 3.0f, 0.25f, 7.0f), 0.0f);
}

}  // namespace
}  // namespace lockstep
