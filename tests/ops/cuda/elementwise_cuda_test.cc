// The element-wise, shape and layout CUDA kernels against their CPU twins (skipped without a
// GPU), and the per-element math of ops/cuda/elementwise_math.h on the host against the CPU
// kernels (runs everywhere).

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "graph/compile.h"
#include "ops/cuda/elementwise_math.h"
#include "tests/testing/backend_compare.h"

namespace lockstep {
namespace {

using testing::ExpectCudaMatchesCpu;
using testing::ExpectCudaOpMatchesCpu;
using testing::GradCheckInput;

const Shape kShape = {4, 8, 5, 3};

// An f32 input with explicit normal draws, so host tests know the values.
GradCheckInput Given(const std::string& name, const Shape& shape, uint64_t seed) {
  return {.name = name, .shape = shape, .values = testing::NormalValues(shape, seed)};
}

TEST(ElementwiseCudaTest, BinaryAndReluOps) {
  LS_SKIP_WITHOUT_GPU();
  ExpectCudaOpMatchesCpu("Add", {{"a", kShape}, {"b", kShape}});
  ExpectCudaOpMatchesCpu("AddRelu", {{"a", kShape}, {"b", kShape}});
  ExpectCudaOpMatchesCpu("Relu", {{"x", kShape}});
  ExpectCudaOpMatchesCpu("ReluGrad", {{"x", kShape}, {"dy", kShape}});
  ExpectCudaOpMatchesCpu("AddReluGrad", {{"x", kShape}, {"dy1", kShape}, {"dy2", kShape}});
}

TEST(ElementwiseCudaTest, ScaleAndFill) {
  LS_SKIP_WITHOUT_GPU();
  ExpectCudaOpMatchesCpu("Scale", {{"x", kShape}}, {{"scale", -0.37}});
  ExpectCudaMatchesCpu({}, [](Builder& b, const std::vector<Value*>&) {
    return std::vector<Value*>{b.Op1(
        "Fill", {}, {{"shape", Shape{3, 1000}}, {"value", 2.5}, {"dtype", std::string("f32")}})};
  });
}

// x (f32) -> From -> To -> f32 for every registered pair; values large enough that the integer
// casts truncate something.
TEST(ElementwiseCudaTest, CastEveryPair) {
  LS_SKIP_WITHOUT_GPU();
  const std::vector<std::string> dtypes = {"f32", "f64", "i32", "i64"};
  for (const std::string& from : dtypes) {
    for (const std::string& to : dtypes) {
      SCOPED_TRACE(from + " -> " + to);
      ExpectCudaMatchesCpu(
          {{.name = "x", .shape = {257}, .stddev = 100.0f}},
          [&](Builder& b, const std::vector<Value*>& in) {
            Value* x = b.Op1("Cast", {in[0]}, {{"dtype", from}});
            Value* y = b.Op1("Cast", {x}, {{"dtype", to}});
            return std::vector<Value*>{b.Op1("Cast", {y}, {{"dtype", std::string("f32")}})};
          });
    }
  }
}

TEST(ElementwiseCudaTest, BiasAddAndItsGradient) {
  LS_SKIP_WITHOUT_GPU();
  ExpectCudaOpMatchesCpu("BiasAdd", {{"x", {8, 16, 7, 7}}, {"bias", {16}}});
  ExpectCudaOpMatchesCpu("BiasAdd", {{"x", {64, 1000}}, {"bias", {1000}}});
  // Sums of 32 * 196 and 256 elements: each a tree reduction of one block.
  ExpectCudaOpMatchesCpu("BiasAddGrad", {{"dy", {32, 64, 14, 14}}});
  ExpectCudaOpMatchesCpu("BiasAddGrad", {{"dy", {256, 1000}}});
}

TEST(ShapeCudaTest, IdentityReshapeFlattenAndPlainReorder) {
  LS_SKIP_WITHOUT_GPU();
  ExpectCudaOpMatchesCpu("Identity", {{"x", kShape}});
  ExpectCudaOpMatchesCpu("Reshape", {{"x", kShape}}, {{"shape", Shape{-1, 15}}});
  ExpectCudaOpMatchesCpu("Flatten", {{"x", kShape}});
  ExpectCudaOpMatchesCpu("Reorder", {{"x", kShape}}, {{"layout", std::string("plain")}});
}

TEST(ShapeCudaTest, BlockedReorderIsACompileErrorNamingTheLayouts) {
  LS_SKIP_WITHOUT_GPU();
  auto graph = std::make_unique<Graph>();
  Builder b(graph.get());
  Value* y = b.Op1("Reorder", {b.Input("x", {2, 16, 3, 3})}, {{"layout", std::string("nChw8c")}});
  ASSERT_TRUE(b.status().ok()) << b.status();
  graph->AddOutput("y", y, OutputKind::kResult);
  auto executor = Compile(std::move(graph), {.device = Device::CUDA(0)});
  ASSERT_FALSE(executor.ok());
  const std::string message(executor.status().message());
  for (const char* part : {"Reorder", "plain", "nChw8c"}) {
    EXPECT_NE(message.find(part), std::string::npos) << message;
  }
}

// Host runs of the CUDA kernels' math must give the CPU kernels' bits. Zeros of both signs sit
// on the ReLU's kink.
std::vector<GradCheckInput> KinkInputs(int count) {
  std::vector<GradCheckInput> inputs;
  for (int k = 0; k < count; ++k) inputs.push_back(Given(std::to_string(k), {6, 50}, 7 + k));
  inputs[0].values[0] = 0.0f;
  inputs[0].values[1] = -0.0f;
  return inputs;
}

void ExpectSameBits(const std::vector<float>& cpu, const std::vector<float>& host) {
  ASSERT_EQ(cpu.size(), host.size());
  for (size_t i = 0; i < cpu.size(); ++i) {
    EXPECT_EQ(std::bit_cast<uint32_t>(cpu[i]), std::bit_cast<uint32_t>(host[i]))
        << "[" << i << "]: CPU " << cpu[i] << ", host math " << host[i];
  }
}

// Runs `op` on the CPU kernel and `math` element by element over the same inputs.
template <typename Math>
void ExpectMathMatchesCpuKernel(const std::string& op, int arity, Math math) {
  const std::vector<GradCheckInput> in = KinkInputs(arity);
  const auto cpu = testing::RunForward(
      in, [&](Builder& b, const std::vector<Value*>& values) { return b.Op(op, values); });
  ASSERT_EQ(cpu.size(), 1u);
  std::vector<float> host(in[0].values.size());
  for (size_t i = 0; i < host.size(); ++i) host[i] = math(in, i);
  ExpectSameBits(cpu[0], host);
}

TEST(ElementwiseMathTest, MatchesCpuKernels) {
  using V = const std::vector<GradCheckInput>&;
  ExpectMathMatchesCpuKernel("Relu", 1, [](V in, size_t i) { return cuda::Relu(in[0].values[i]); });
  ExpectMathMatchesCpuKernel("ReluGrad", 2, [](V in, size_t i) {
    return cuda::ReluGrad(in[0].values[i], in[1].values[i]);
  });
  ExpectMathMatchesCpuKernel(
      "AddRelu", 2, [](V in, size_t i) { return cuda::AddRelu(in[0].values[i], in[1].values[i]); });
  ExpectMathMatchesCpuKernel("AddReluGrad", 3, [](V in, size_t i) {
    return cuda::AddReluGrad(in[0].values[i], in[1].values[i], in[2].values[i]);
  });
}

}  // namespace
}  // namespace lockstep
