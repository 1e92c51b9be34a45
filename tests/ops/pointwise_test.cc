// A new float element-wise op in three lines, as ops/elementwise_math.h, ops/elementwise.cc and
// ops/cpu/elementwise.cc would hold them: its math, its definition and its CPU registration.

#include "ops/cpu/pointwise.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/builder.h"
#include "graph/op_registry.h"
#include "ops/host_device.h"
#include "tests/testing/grad_check.h"

namespace lockstep {
namespace {

// x * x + bias: a functor with state, as an op with an attribute has.
struct SquarePlusOp {
  float bias = 0.0f;
  LS_HOST_DEVICE float operator()(float x) const { return x * x + bias; }
};

SquarePlusOp SquarePlusOf(const Node& node) {
  return {.bias = static_cast<float>(node.attrs.GetFloat("bias"))};
}

absl::StatusOr<std::vector<TensorType>> SameAsInput(const InferContext& ctx) {
  return std::vector<TensorType>{ctx.inputs[0]};
}

REGISTER_OP("TestSquarePlus").Inputs(1).Attr("bias", 0.0).Infer(SameAsInput);
[[maybe_unused]] const bool kRegistered =
    cpu::RegisterPointwise<SquarePlusOp>("TestSquarePlus", SquarePlusOf);

TEST(PointwiseTest, ANewOpRunsInEveryFloatDType) {
  const std::vector<testing::GradCheckInput> inputs = {
      {.name = "x", .shape = {5}, .values = {-2, -0.5, 0, 1.5, 3}}};
  auto outputs = testing::RunForward(inputs, [](Builder& b, const std::vector<Value*>& in) {
    const Attrs bias = {{"bias", 0.25}};
    Value* bf16 = b.Op1("Cast", {in[0]}, {{"dtype", std::string("bf16")}});
    Value* squared_bf16 = b.Op1("TestSquarePlus", {bf16}, bias);
    return std::vector<Value*>{b.Op1("TestSquarePlus", {in[0]}, bias),
                               b.Op1("Cast", {squared_bf16}, {{"dtype", std::string("f32")}})};
  });
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(outputs[0], (std::vector<float>{4.25, 0.5, 0.25, 2.5, 9.25}));
  EXPECT_EQ(outputs[1], outputs[0]);  // every value fits bf16's 8 bits
}

}  // namespace
}  // namespace lockstep
