// The per-element math of ops/elementwise_math.h, which the CPU and CUDA element-wise kernels
// share, on the host against the CPU kernels, bit for bit.

#include "ops/elementwise_math.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/testing/grad_check.h"

namespace lockstep {
namespace {

using testing::GradCheckInput;

// An f32 input with explicit normal draws, so host tests know the values.
GradCheckInput Given(const std::string& name, const Shape& shape, uint64_t seed) {
  return {.name = name, .shape = shape, .values = testing::NormalValues(shape, seed)};
}

// The math must give the CPU kernels' bits. Zeros of both signs sit on the ReLU's kink.
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

// Runs `op` on the CPU kernel and `fn` element by element over the same inputs.
template <typename Fn>
void ExpectMathMatchesCpuKernel(const std::string& op, int arity, Fn fn) {
  const std::vector<GradCheckInput> in = KinkInputs(arity);
  const auto cpu = testing::RunForward(
      in, [&](Builder& b, const std::vector<Value*>& values) { return b.Op(op, values); });
  ASSERT_EQ(cpu.size(), 1u);
  std::vector<float> host(in[0].values.size());
  for (size_t i = 0; i < host.size(); ++i) host[i] = fn(in, i);
  ExpectSameBits(cpu[0], host);
}

TEST(ElementwiseMathTest, MatchesCpuKernels) {
  using V = const std::vector<GradCheckInput>&;
  ExpectMathMatchesCpuKernel("Relu", 1, [](V in, size_t i) { return math::Relu(in[0].values[i]); });
  ExpectMathMatchesCpuKernel("ReluGrad", 2, [](V in, size_t i) {
    return math::ReluGrad(in[0].values[i], in[1].values[i]);
  });
  ExpectMathMatchesCpuKernel(
      "AddRelu", 2, [](V in, size_t i) { return math::AddRelu(in[0].values[i], in[1].values[i]); });
  ExpectMathMatchesCpuKernel("AddReluGrad", 3, [](V in, size_t i) {
    return math::AddReluGrad(in[0].values[i], in[1].values[i], in[2].values[i]);
  });
}

}  // namespace
}  // namespace lockstep
