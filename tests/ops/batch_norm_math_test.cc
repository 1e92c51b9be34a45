// The math of ops/batch_norm_math.h that the CUDA batch norm runs around cuDNN: the conversions
// between cuDNN's saved inverse standard deviation and the ops' variance, and the fused ReLU's
// mask as oneDNN's.

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

}  // namespace
}  // namespace lockstep
