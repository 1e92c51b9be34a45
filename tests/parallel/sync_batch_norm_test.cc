// SyncBatchNorm in a world of one: the same function as BatchNorm, with a numeric gradient.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "parallel/comm_group.h"
#include "tests/parallel/replica_training.h"
#include "tests/testing/backend_compare.h"
#include "tests/testing/grad_check.h"

namespace lockstep::testing {
namespace {

// What the SyncBatchNorm kernels read: the communication groups of a world of one.
PassConfig Groups() {
  PassConfig config;
  config.Set(std::make_shared<parallel::CommGroups>(WorldOfOne()));
  return config;
}

std::vector<GradCheckInput> NormInputs(const Shape& x_shape) {
  const int64_t c = x_shape[1];
  auto state = [&](const char* name, float shift) {
    std::vector<float> values = NormalValues({c}, 4);
    for (float& v : values) v = shift + 0.3f * std::abs(v);
    return GradCheckInput{.name = name,
                          .shape = {c},
                          .differentiable = false,
                          .role = InputRole::kState,
                          .values = values};
  };
  return {{.name = "x", .shape = x_shape, .stddev = 2.0f},
          {.name = "gamma", .shape = {c}},
          {.name = "beta", .shape = {c}},
          state("mean", 0.0f),
          state("var", 1.0f)};
}

BuildFn NormY(const char* op) {
  return [op](Builder& b, const std::vector<Value*>& in) -> std::vector<Value*> {
    std::vector<Value*> out = b.Op(op, in);
    return {out.empty() ? nullptr : out[0]};
  };
}

// Every output (y, statistics, running averages) of SyncBatchNorm and BatchNorm.
void ExpectSameAsBatchNorm(const Shape& shape) {
  const std::vector<GradCheckInput> in = NormInputs(shape);
  auto all = [](const char* op) {
    return [op](Builder& b, const std::vector<Value*>& v) { return b.Op(op, v); };
  };
  const auto sync = RunForward(in, all("SyncBatchNorm"), Device::CPU(), Groups());
  const auto plain = RunForward(in, all("BatchNorm"));
  ASSERT_EQ(sync.size(), plain.size());
  for (size_t o = 0; o < sync.size(); ++o) {
    ASSERT_EQ(sync[o].size(), plain[o].size());
    for (size_t i = 0; i < sync[o].size(); ++i) {
      EXPECT_NEAR(sync[o][i], plain[o][i], 1e-5 * std::max(1.0f, std::abs(plain[o][i])))
          << "output " << o << " element " << i << " of " << ShapeToString(shape);
    }
  }
}

TEST(SyncBatchNormTest, WorldOfOneComputesBatchNorm) {
  ExpectSameAsBatchNorm({2, 3, 3, 3});
  ExpectSameAsBatchNorm({2, 16, 2, 2});  // blocked layout
  ExpectSameAsBatchNorm({6, 4});
}

TEST(SyncBatchNormTest, Gradient4D) {
  ExpectGradientsMatch(NormInputs({2, 3, 3, 3}), NormY("SyncBatchNorm"), {.config = Groups()});
}

TEST(SyncBatchNormTest, Gradient4DBlocked) {
  ExpectGradientsMatch(NormInputs({2, 16, 2, 2}), NormY("SyncBatchNorm"), {.config = Groups()});
}

TEST(SyncBatchNormTest, Gradient2D) {
  ExpectGradientsMatch(NormInputs({6, 4}), NormY("SyncBatchNorm"), {.config = Groups()});
}

// On CUDA the statistics go through NCCL (a world of one): the same outputs as the CPU kernel,
// and the same gradient against central differences.
TEST(SyncBatchNormTest, CudaMatchesCpu) {
  LS_SKIP_WITHOUT_GPU();
  ExpectCudaOpMatchesCpu("SyncBatchNorm", NormInputs({4, 8, 5, 5}), {}, 1e-4, Groups());
  ExpectCudaOpMatchesCpu("SyncBatchNorm", NormInputs({6, 4}), {}, 1e-4, Groups());
  std::vector<GradCheckInput> grad = NormInputs({4, 8, 5, 5});
  grad.erase(grad.begin() + 2);  // (x, gamma, mean, var, dy)
  grad.push_back({.name = "dy", .shape = {4, 8, 5, 5}});
  ExpectCudaOpMatchesCpu("SyncBatchNormGrad", grad, {}, 1e-4, Groups());
}

TEST(SyncBatchNormTest, CudaGradient) {
  LS_SKIP_WITHOUT_GPU();
  ExpectGradientsMatch(NormInputs({2, 3, 3, 3}), NormY("SyncBatchNorm"),
                       {.device = Device::CUDA(0), .config = Groups()});
}

}  // namespace
}  // namespace lockstep::testing
