#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>

#include "graph/builder.h"
#include "graph/compile.h"
#include "tests/testing/grad_check.h"

namespace lockstep {
namespace {

constexpr int64_t kBatch = 2;

// conv -> BN -> ReLU -> max pool (3x3, stride 2, overlapping windows) -> two residual blocks
// (conv -> BN, + input, ReLU) -> global average -> dense -> cross-entropy: a BN-ReLU pair, a max
// pool, two Add-ReLUs and, at the second block's input, two gradients meeting at a ReLU to fuse;
// the BNs before the Adds stay as they are. `channels` decides the layout: a multiple of 8 runs
// blocked, others plain.
std::unique_ptr<Graph> BuildNet(int64_t channels) {
  auto graph = std::make_unique<Graph>();
  Builder b(graph.get());
  Value* x = b.Input("x", {kBatch, 3, 12, 12});
  Value* labels = b.Input("labels", {kBatch}, DType::kI32);
  Attrs same = {{"padding", Shape{1, 1}}};
  auto conv_bn = [&](Value* h, const std::string& name, int64_t in) {
    h = b.Op1("Conv2D", {h, b.Parameter(name + ".w", {channels, in, 3, 3})}, same);
    return b.Op(
        "BatchNorm",
        {h, b.Parameter(name + ".gamma", {channels}), b.Parameter(name + ".beta", {channels}),
         b.State(name + ".mean", {channels}), b.State(name + ".var", {channels})})[0];
  };
  Value* h = b.Op1("Relu", {conv_bn(x, "a", 3)});
  Value* pooled = b.Op1(
      "MaxPool", {h}, {{"kernel", Shape{3, 3}}, {"stride", Shape{2, 2}}, {"padding", Shape{1, 1}}});
  h = b.Op1("Relu", {b.Op1("Add", {conv_bn(pooled, "b", channels), pooled})});
  h = b.Op1("Relu", {b.Op1("Add", {conv_bn(h, "c", channels), h})});
  h = b.Op1("Flatten", {b.Op1("GlobalAvgPool", {h})});
  Value* logits = b.Op1("MatMul", {h, b.Parameter("fc", {channels, 5})});
  graph->AddOutput("loss", b.Op("SoftmaxCrossEntropy", {logits, labels})[0], OutputKind::kResult);
  EXPECT_TRUE(b.status().ok()) << b.status();
  return graph;
}

std::unique_ptr<Executor> CompileNet(int64_t channels, bool fuse) {
  auto executor =
      Compile(BuildNet(channels), {.autodiff = AutodiffOptions{}, .fuse_kernels = fuse});
  EXPECT_TRUE(executor.ok()) << executor.status();
  return executor.ok() ? std::move(*executor) : nullptr;
}

std::map<std::string, int> CountOps(const Graph& graph) {
  std::map<std::string, int> count;
  for (const auto& node : graph.nodes()) ++count[node->op->name()];
  return count;
}

TEST(FuseKernelsTest, NormReluMaxPoolAndAddReluBecomeFusedNodes) {
  for (int64_t channels : {16, 6}) {
    SCOPED_TRACE(absl::StrCat(channels, " channels"));
    auto executor = CompileNet(channels, /*fuse=*/true);
    ASSERT_NE(executor, nullptr);
    std::map<std::string, int> ops = CountOps(executor->graph());
    EXPECT_EQ(ops["BatchNormRelu"], 1);
    EXPECT_EQ(ops["BatchNormReluGrad"], 1);
    EXPECT_EQ(ops["MaxPoolWithArgmax"], 1);
    EXPECT_EQ(ops["MaxPoolGradWithArgmax"], 1);
    EXPECT_EQ(ops["MaxPool"], 0);
    EXPECT_EQ(ops["MaxPoolGrad"], 0);
    EXPECT_EQ(ops["AddRelu"], 2);
    EXPECT_EQ(ops["Relu"], 0);
    // The first block's output gets the second block's two gradients; the last ReLU's gradient
    // stays a ReluGrad, reading AddRelu's output.
    EXPECT_EQ(ops["AddReluGrad"], 1);
    EXPECT_EQ(ops["ReluGrad"], 1);
    // The normalizations feeding the residual Adds keep their own ops.
    EXPECT_EQ(ops["BatchNorm"], 2);
    EXPECT_EQ(ops["BatchNormGrad"], 2);
  }
}

std::string Bytes(const Tensor& tensor) {
  return std::string(static_cast<const char*>(tensor.raw_data()), tensor.nbytes());
}

// Every result, gradient and running statistic of one step, as plain bytes.
std::map<std::string, std::string> RunStep(Executor& executor) {
  uint64_t seed = 0;
  for (const char* input : {"x", "a.w", "a.gamma", "a.beta", "b.w", "b.gamma", "b.beta", "c.w",
                            "c.gamma", "c.beta", "fc"}) {
    auto value = executor.ReadInput(input);
    EXPECT_TRUE(value.ok()) << value.status();
    if (!value.ok()) return {};
    std::vector<float> draws = testing::NormalValues(value->shape(), ++seed);
    std::memcpy(value->raw_data(), draws.data(), value->nbytes());
    EXPECT_TRUE(executor.WriteInput(input, *value).ok());
  }
  auto labels = executor.Input("labels");
  EXPECT_TRUE(labels.ok());
  labels->data<int32_t>()[0] = 1;
  labels->data<int32_t>()[1] = 3;
  EXPECT_TRUE(executor.Run().ok());
  std::map<std::string, std::string> outputs;
  for (const GraphOutput& output : executor.graph().outputs()) {
    auto value = executor.ReadOutput(output.name);
    EXPECT_TRUE(value.ok()) << output.name << ": " << value.status();
    if (value.ok()) outputs[output.name] = Bytes(*value);
  }
  // The running statistics, updated in place.
  for (const char* state : {"a.mean", "a.var", "b.mean", "b.var", "c.mean", "c.var"}) {
    auto value = executor.ReadInput(state);
    EXPECT_TRUE(value.ok()) << state << ": " << value.status();
    if (value.ok()) outputs[state] = Bytes(*value);
  }
  return outputs;
}

TEST(FuseKernelsTest, FusedAndUnfusedStepsAgreeBitForBit) {
  for (int64_t channels : {16, 6}) {
    SCOPED_TRACE(absl::StrCat(channels, " channels"));
    auto fused = CompileNet(channels, /*fuse=*/true);
    auto unfused = CompileNet(channels, /*fuse=*/false);
    ASSERT_NE(fused, nullptr);
    ASSERT_NE(unfused, nullptr);
    std::map<std::string, std::string> expected = RunStep(*unfused);
    std::map<std::string, std::string> actual = RunStep(*fused);
    ASSERT_EQ(actual.size(), expected.size());
    EXPECT_EQ(actual.size(), 17u);  // loss, 10 gradients, 6 running statistics
    for (const auto& [name, bytes] : expected) {
      EXPECT_TRUE(actual[name] == bytes) << name << " differs with fused kernels";
    }
  }
}

// The fused kernels against central differences (the plain layout; the blocked one is checked by
// AutodiffTest.SmallConvNetMatchesFiniteDifferencesOfItsLoss): BN -> ReLU -> max pool, then
// relu(pooled + skip) read twice by relu(0.5 * r + r), whose gradients meet at r.
TEST(FuseKernelsTest, FusedGradientsMatchFiniteDifferences) {
  using testing::GradCheckInput;
  constexpr int64_t kChannels = 6;
  std::vector<GradCheckInput> inputs = {
      {.name = "x", .shape = {kBatch, kChannels, 6, 6}},
      {.name = "gamma", .shape = {kChannels}},
      {.name = "beta", .shape = {kChannels}},
      {.name = "mean",
       .shape = {kChannels},
       .differentiable = false,
       .role = InputRole::kState,
       .values = std::vector<float>(kChannels, 0.0f)},
      {.name = "var",
       .shape = {kChannels},
       .differentiable = false,
       .role = InputRole::kState,
       .values = std::vector<float>(kChannels, 1.0f)},
      {.name = "skip", .shape = {kBatch, kChannels, 3, 3}},
  };
  auto net = [](Builder& b, const std::vector<Value*>& in) {
    Value* h = b.Op1("Relu", {b.Op("BatchNorm", {in[0], in[1], in[2], in[3], in[4]})[0]});
    h = b.Op1("MaxPool", {h},
              {{"kernel", Shape{3, 3}}, {"stride", Shape{2, 2}}, {"padding", Shape{1, 1}}});
    Value* r = b.Op1("Relu", {b.Op1("Add", {h, in[5]})});
    return std::vector<Value*>{
        b.Op1("Relu", {b.Op1("Add", {b.Op1("Scale", {r}, {{"scale", 0.5}}), r})})};
  };
  testing::ExpectGradientsMatch(inputs, net, {.step = 1e-3, .tolerance = 1e-2, .kink = 0.05});
}

}  // namespace
}  // namespace lockstep
