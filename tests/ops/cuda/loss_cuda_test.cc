// The loss and metric CUDA kernels against their CPU twins (skipped without a GPU).

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/ops/loss_cases.h"
#include "tests/testing/backend_compare.h"

namespace lockstep {
namespace {

using testing::ExpectCudaOpMatchesCpu;
using testing::GradCheckInput;
using testing::LossGradInputs;
using testing::LossInputs;

TEST(LossCudaTest, SoftmaxCrossEntropy) {
  LS_SKIP_WITHOUT_GPU();
  ExpectCudaOpMatchesCpu("SoftmaxCrossEntropy", LossInputs(4, 5));
  ExpectCudaOpMatchesCpu("SoftmaxCrossEntropy", LossInputs(64, 1000));
  // More rows than a block has threads: the mean loops over them; logits near 100 need the
  // row maximum subtracted.
  ExpectCudaOpMatchesCpu("SoftmaxCrossEntropy", LossInputs(300, 10, 100.0f));
}

TEST(LossCudaTest, SoftmaxCrossEntropyGrad) {
  LS_SKIP_WITHOUT_GPU();
  ExpectCudaOpMatchesCpu("SoftmaxCrossEntropyGrad", LossGradInputs(4, 5));
  ExpectCudaOpMatchesCpu("SoftmaxCrossEntropyGrad", LossGradInputs(64, 1000));
}

TEST(LossCudaTest, ArgMaxAndAccuracyCount) {
  LS_SKIP_WITHOUT_GPU();
  ExpectCudaOpMatchesCpu("ArgMax", {LossInputs(64, 1000)[0]}, {{"axis", int64_t{1}}});
  ExpectCudaOpMatchesCpu("AccuracyCount", LossInputs(300, 10));
  // Ties go to the first index, whichever thread holds it.
  std::vector<GradCheckInput> ties = LossInputs(3, 700);
  for (float& v : ties[0].values) v = std::round(v);
  ExpectCudaOpMatchesCpu("ArgMax", {ties[0]}, {{"axis", int64_t{1}}});
  ExpectCudaOpMatchesCpu("AccuracyCount", ties);
}

}  // namespace
}  // namespace lockstep
