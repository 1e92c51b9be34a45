#include <gtest/gtest.h>

#include "core/allocator.h"
#include "graph/builder.h"
#include "graph/compile.h"

namespace lockstep {
namespace {

constexpr int kLayers = 10;
constexpr int64_t kBatch = 8;
constexpr int64_t kWidth = 32;

// A 10-layer perceptron (dense + bias + relu per layer) with a softmax cross-entropy loss,
// compiled for training.
std::unique_ptr<Executor> CompileTenLayerNet() {
  auto graph = std::make_unique<Graph>();
  Builder b(graph.get());
  Value* h = b.Input("x", {kBatch, kWidth});
  Value* labels = b.Input("labels", {kBatch}, DType::kI32);
  for (int i = 0; i < kLayers; ++i) {
    Value* w = b.Parameter(absl::StrCat("w", i), {kWidth, kWidth});
    Value* bias = b.Parameter(absl::StrCat("b", i), {kWidth});
    h = b.Op1("Relu", {b.Op1("BiasAdd", {b.Op1("MatMul", {h, w}), bias})});
  }
  graph->AddOutput("loss", b.Op("SoftmaxCrossEntropy", {h, labels})[0], OutputKind::kResult);
  EXPECT_TRUE(b.status().ok()) << b.status();
  auto executor = Compile(std::move(graph), {.autodiff = AutodiffOptions{}});
  EXPECT_TRUE(executor.ok()) << executor.status();
  return executor.ok() ? std::move(*executor) : nullptr;
}

TEST(MemoryPlanTest, ArenaReusesMemoryAcrossLifetimes) {
  auto executor = CompileTenLayerNet();
  ASSERT_NE(executor, nullptr);
  size_t activation_bytes = 0;
  for (const auto& node : executor->graph().nodes()) {
    for (const auto& output : node->outputs) {
      if (output->alloc.region == Region::kArena) activation_bytes += output->bytes();
    }
  }
  size_t arena = executor->graph().plan().arena;
  EXPECT_GT(arena, 0u);
  EXPECT_LT(arena, activation_bytes) << "arena " << arena << ", activations " << activation_bytes;
  // Forward activations are kept for the backward, but backward temporaries reuse memory.
  EXPECT_LT(arena, activation_bytes * 3 / 4);
}

TEST(MemoryPlanTest, StepsAllocateNothing) {
  auto executor = CompileTenLayerNet();
  ASSERT_NE(executor, nullptr);
  ASSERT_TRUE(executor->Run().ok());
  int64_t before = CpuAllocatorStats().allocations;
  for (int step = 0; step < 5; ++step) ASSERT_TRUE(executor->Run().ok());
  EXPECT_EQ(CpuAllocatorStats().allocations, before);
}

TEST(MemoryPlanTest, ParametersAndGradientsAreViewsOfFlatBuffers) {
  auto executor = CompileTenLayerNet();
  ASSERT_NE(executor, nullptr);
  const auto* params = static_cast<const char*>(executor->parameters().raw_data());
  const auto* grads = static_cast<const char*>(executor->gradients().raw_data());
  size_t expected_offset = 0;
  for (int i = 0; i < kLayers; ++i) {
    for (std::string name : {absl::StrCat("w", i), absl::StrCat("b", i)}) {
      Tensor param = *executor->Input(name);
      Tensor grad = *executor->Output(GradientName(name));
      size_t offset = static_cast<const char*>(param.raw_data()) - params;
      EXPECT_EQ(offset, expected_offset) << name;
      EXPECT_EQ(static_cast<const char*>(grad.raw_data()) - grads, static_cast<ptrdiff_t>(offset))
          << name;
      expected_offset += AlignUp(param.nbytes());
    }
  }
  EXPECT_EQ(executor->parameters().nbytes(), expected_offset);
}

// Memory the device does not have is an error naming the region, the bytes and the device, not
// an abort: a graph whose data input alone needs 1 PiB (more than x86-64's address space).
TEST(MemoryPlanTest, MemoryTheDeviceLacksIsAnErrorNamingIt) {
  auto graph = std::make_unique<Graph>();
  Builder b(graph.get());
  Value* x = b.Input("x", {int64_t{1} << 48});
  graph->AddOutput("y", b.Op1("Relu", {x}), OutputKind::kResult);
  ASSERT_TRUE(b.status().ok()) << b.status();
  auto executor = Compile(std::move(graph), {});
  ASSERT_FALSE(executor.ok());
  EXPECT_EQ(executor.status().code(), absl::StatusCode::kResourceExhausted) << executor.status();
  EXPECT_NE(executor.status().message().find("allocating 1125899906842624 bytes on cpu"),
            std::string::npos)
      << executor.status();
}

}  // namespace
}  // namespace lockstep
