// The optimizer CUDA kernels against their CPU twins (skipped without a GPU).

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "ops/cuda/optimizer_kernels.h"
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
std::vector<GradCheckInput> DynamicMomentumInputs(std::vector<GradCheckInput> inputs,
                                                  float finite) {
  inputs.push_back({.name = "loss_scale", .shape = {}, .values = {1024.0f}});
  inputs.push_back({.name = "finite", .shape = {}, .values = {finite}});
  return inputs;
}

TEST(OptimizerCudaTest, MomentumUnderDynamicLossScale) {
  LS_SKIP_WITHOUT_GPU();
  for (float finite : {1.0f, 0.0f}) {
    testing::ExpectCudaOpMatchesCpu("Momentum",
                                    DynamicMomentumInputs(testing::MomentumInputs(), finite),
                                    testing::MomentumConfigs()[1], 1e-5);
  }
}

// A bucket's update in one launch: tensors of several chunks, and of less than one.
TEST(OptimizerCudaTest, GroupedMomentum) {
  LS_SKIP_WITHOUT_GPU();
  for (const Attrs& attrs : testing::MomentumConfigs()) {
    SCOPED_TRACE(attrs.ToString());
    testing::ExpectCudaOpMatchesCpu("Momentum", testing::GroupedMomentumInputs(), attrs, 1e-5);
  }
  for (float finite : {1.0f, 0.0f}) {
    testing::ExpectCudaOpMatchesCpu("Momentum",
                                    DynamicMomentumInputs(testing::GroupedMomentumInputs(), finite),
                                    testing::MomentumConfigs()[1], 1e-5);
  }
}

// The chunk table of the grouped kernels: every element of every tensor once, in order.
TEST(OptimizerCudaTest, ChunksCoverEveryElementOnce) {
  const std::vector<int64_t> sizes = {1, 8192, 8193, 0, 20000};
  const std::vector<cuda::TensorChunk> chunks = cuda::ChunkTensors(sizes);
  std::vector<int64_t> covered(sizes.size(), 0);
  for (const cuda::TensorChunk& chunk : chunks) {
    ASSERT_LT(chunk.begin, chunk.end);
    ASSERT_LE(chunk.end - chunk.begin, cuda::kChunkElements);
    EXPECT_EQ(chunk.begin, covered[chunk.tensor]) << "tensor " << chunk.tensor;
    covered[chunk.tensor] = chunk.end;
  }
  EXPECT_EQ(covered, sizes);
  EXPECT_EQ(chunks.size(), 1u + 1u + 2u + 3u);
}

// Three tensors, the last of several chunks with `bad` in its second chunk.
std::vector<GradCheckInput> AllFiniteInputs(float bad) {
  std::vector<GradCheckInput> inputs = {
      OptimizerInput("a", testing::OptimizerShape(), 6, InputRole::kData),
      OptimizerInput("b", {1000}, 7, InputRole::kData),
      OptimizerInput("c", {20000}, 8, InputRole::kData)};
  inputs[2].values[9000] = bad;
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
