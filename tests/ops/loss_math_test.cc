// The per-row math of ops/loss_math.h, which the CPU and CUDA loss kernels share, on the host
// against the CPU kernels, in one share per row as the CPU takes it and in several as a CUDA
// block splits a row.

#include "ops/loss_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/ops/loss_cases.h"

namespace lockstep {
namespace {

using testing::GradCheckInput;
using testing::LossGradInputs;
using testing::LossInputs;

// The host math over rows split into `stride` shares as a block splits them (stride 1: the
// whole row), combined as BlockReduce does: probs and the mean loss.
struct HostSoftmax {
  std::vector<float> probs;
  float loss = 0.0f;
};

HostSoftmax SoftmaxByShares(const std::vector<GradCheckInput>& in, int64_t stride) {
  const int64_t rows = in[0].shape[0], classes = in[0].shape[1];
  HostSoftmax out{.probs = std::vector<float>(rows * classes)};
  double total = 0.0;
  for (int64_t i = 0; i < rows; ++i) {
    const float* x = &in[0].values[i * classes];
    float* p = &out.probs[i * classes];
    float max = -INFINITY;
    for (int64_t t = 0; t < stride; ++t)
      max = math::MaxOf(max, math::ShareMax(x, classes, {t, stride}));
    double sum = 0.0;
    for (int64_t t = 0; t < stride; ++t) sum += math::ShareExpSum(x, classes, max, {t, stride}, p);
    for (int64_t t = 0; t < stride; ++t) math::ShareNormalize(p, classes, sum, {t, stride});
    total += math::RowCrossEntropy(x, classes, static_cast<int32_t>(in[1].values[i]), max, sum);
  }
  out.loss = math::MeanLoss(total, rows);
  return out;
}

TEST(LossMathTest, SoftmaxCrossEntropyMatchesCpuKernel) {
  const std::vector<GradCheckInput> in = LossInputs(6, 37);
  const auto cpu = testing::RunForward(in, [](Builder& b, const std::vector<Value*>& values) {
    return b.Op("SoftmaxCrossEntropy", values);
  });
  ASSERT_EQ(cpu.size(), 2u);
  // One share per row repeats the CPU kernel's operations; more shares only reorder the sum.
  for (int64_t stride : {1, 3, 256}) {
    SCOPED_TRACE(stride);
    const HostSoftmax host = SoftmaxByShares(in, stride);
    EXPECT_NEAR(host.loss, cpu[0][0], 1e-6);
    ASSERT_EQ(host.probs.size(), cpu[1].size());
    for (size_t j = 0; j < host.probs.size(); ++j) EXPECT_NEAR(host.probs[j], cpu[1][j], 1e-7) << j;
  }
}

TEST(LossMathTest, BadLabelGivesNaN) {
  std::vector<GradCheckInput> in = LossInputs(2, 5);
  in[1].values[1] = 5.0f;
  EXPECT_TRUE(std::isnan(SoftmaxByShares(in, 1).loss));
  EXPECT_TRUE(std::isnan(math::CrossEntropyGrad(0.5f, 0, -1, 5, 1.0f)));
}

TEST(LossMathTest, SoftmaxCrossEntropyGradMatchesCpuKernel) {
  const std::vector<GradCheckInput> in = LossGradInputs(5, 13);
  const auto cpu = testing::RunForward(in, [](Builder& b, const std::vector<Value*>& values) {
    return b.Op("SoftmaxCrossEntropyGrad", values);
  });
  ASSERT_EQ(cpu.size(), 1u);
  const int64_t rows = 5, classes = 13;
  const float scale = math::CrossEntropyGradScale(in[2].values[0], rows);
  for (int64_t i = 0; i < rows * classes; ++i) {
    const auto label = static_cast<int32_t>(in[1].values[i / classes]);
    EXPECT_FLOAT_EQ(math::CrossEntropyGrad(in[0].values[i], i % classes, label, classes, scale),
                    cpu[0][i])
        << i;
  }
}

TEST(LossMathTest, ArgMaxMatchesCpuKernelWithTies) {
  std::vector<GradCheckInput> in = LossInputs(8, 41);
  for (float& v : in[0].values) v = std::round(v);  // many ties
  const auto cpu = testing::RunForward({in[0]}, [](Builder& b, const std::vector<Value*>& x) {
    return b.Op("ArgMax", x, {{"axis", int64_t{1}}});
  });
  ASSERT_EQ(cpu.size(), 1u);
  for (int64_t i = 0; i < 8; ++i) {
    const float* x = &in[0].values[i * 41];
    for (int64_t stride : {1, 4, 64}) {
      // Combined from the last share to the first, as a tree may.
      math::ArgMaxCandidate best{-INFINITY, -1};
      for (int64_t t = stride - 1; t >= 0; --t) {
        best = math::BetterArgMax(best, math::ShareArgMax(x, 41, {t, stride}));
      }
      EXPECT_EQ(best.index, static_cast<int64_t>(cpu[0][i]))
          << "row " << i << ", stride " << stride;
    }
  }
}

}  // namespace
}  // namespace lockstep
