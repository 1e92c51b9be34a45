#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/allocator.h"
#include "graph/compile.h"
#include "ops/cpu/cpu_layouts.h"
#include "tests/testing/grad_check.h"

namespace lockstep {
namespace {

using testing::ExpectGradientsMatch;
using testing::ExpectOpGradientsMatch;
using testing::GradCheckInput;
using testing::RunForward;

struct ConvCase {
  Shape x;  // (N, C, H, W)
  Shape w;  // (O, C/groups, KH, KW)
  std::vector<int64_t> stride = {1, 1};
  std::vector<int64_t> padding = {0, 0};
  std::vector<int64_t> dilation = {1, 1};
  int64_t groups = 1;

  Attrs attrs() const {
    return {{"stride", stride}, {"padding", padding}, {"dilation", dilation}, {"groups", groups}};
  }
};

// Naive convolution in double: x (N, C, H, W) * w (O, C/G, KH, KW) -> (N, O, OH, OW).
std::vector<double> ReferenceConv(const std::vector<double>& x, const Shape& xs,
                                  const std::vector<float>& w, const ConvCase& c, Shape* ys) {
  const Shape& ws = c.w;
  const int64_t group_in = ws[1], group_out = ws[0] / c.groups;
  const int64_t oh = (xs[2] + 2 * c.padding[0] - (ws[2] - 1) * c.dilation[0] - 1) / c.stride[0] + 1;
  const int64_t ow = (xs[3] + 2 * c.padding[1] - (ws[3] - 1) * c.dilation[1] - 1) / c.stride[1] + 1;
  *ys = {xs[0], ws[0], oh, ow};
  std::vector<double> y(NumElements(*ys), 0.0);
  for (int64_t n = 0; n < xs[0]; ++n)
    for (int64_t o = 0; o < ws[0]; ++o)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double sum = 0.0;
          for (int64_t ci = 0; ci < group_in; ++ci) {
            const int64_t channel = o / group_out * group_in + ci;
            for (int64_t ki = 0; ki < ws[2]; ++ki)
              for (int64_t kj = 0; kj < ws[3]; ++kj) {
                const int64_t h = i * c.stride[0] - c.padding[0] + ki * c.dilation[0];
                const int64_t v = j * c.stride[1] - c.padding[1] + kj * c.dilation[1];
                if (h < 0 || h >= xs[2] || v < 0 || v >= xs[3]) continue;
                sum += x[((n * xs[1] + channel) * xs[2] + h) * xs[3] + v] *
                       w[((o * group_in + ci) * ws[2] + ki) * ws[3] + kj];
              }
          }
          y[((n * ws[0] + o) * oh + i) * ow + j] = sum;
        }
  return y;
}

void ExpectNear(const std::vector<float>& actual, const std::vector<double>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  int failures = 0;
  for (size_t i = 0; i < actual.size() && failures < 5; ++i) {
    if (std::abs(actual[i] - expected[i]) > 1e-4 * std::max(1.0, std::abs(expected[i]))) {
      ++failures;
      ADD_FAILURE() << "element " << i << ": got " << actual[i] << ", expected " << expected[i];
    }
  }
}

// Runs a chain of convolutions through the compiled graph and through ReferenceConv.
void ExpectChainMatchesReference(const Shape& x_shape, const std::vector<ConvCase>& convs) {
  std::vector<GradCheckInput> inputs = {
      {.name = "x", .shape = x_shape, .values = testing::NormalValues(x_shape, 7)}};
  for (size_t k = 0; k < convs.size(); ++k) {
    inputs.push_back({.name = absl::StrCat("w", k),
                      .shape = convs[k].w,
                      .values = testing::NormalValues(convs[k].w, 11 + k)});
  }
  std::vector<std::vector<float>> outputs =
      RunForward(inputs, [&](Builder& b, const std::vector<Value*>& in) {
        Value* h = in[0];
        for (size_t k = 0; k < convs.size(); ++k)
          h = b.Op1("Conv2D", {h, in[k + 1]}, convs[k].attrs());
        return std::vector<Value*>{h};
      });
  ASSERT_EQ(outputs.size(), 1u);
  std::vector<double> expected(inputs[0].values.begin(), inputs[0].values.end());
  Shape shape = x_shape;
  for (size_t k = 0; k < convs.size(); ++k) {
    Shape y_shape;
    expected = ReferenceConv(expected, shape, inputs[k + 1].values, convs[k], &y_shape);
    shape = y_shape;
  }
  ExpectNear(outputs[0], expected);
}

const ConvCase kPlain{.x = {2, 3, 7, 7}, .w = {4, 3, 3, 3}};
const ConvCase kStride2{.x = {2, 3, 8, 7}, .w = {4, 3, 3, 3}, .stride = {2, 2}};
const ConvCase kPadding1{.x = {2, 3, 5, 6}, .w = {5, 3, 3, 3}, .padding = {1, 1}};
const ConvCase kDilation2{
    .x = {2, 3, 9, 8}, .w = {4, 3, 3, 3}, .padding = {2, 1}, .dilation = {2, 2}};
const ConvCase kGroups2{.x = {2, 4, 6, 6}, .w = {6, 2, 3, 3}, .groups = 2};
const ConvCase kDepthwise{.x = {2, 4, 6, 6}, .w = {4, 1, 3, 3}, .padding = {1, 1}, .groups = 4};
const ConvCase kAsymmetric{
    .x = {2, 3, 5, 7}, .w = {4, 3, 1, 3}, .stride = {1, 2}, .padding = {0, 1}};
// C = 16 and O = 32: the native blocked layout in and out.
const ConvCase kBlocked{
    .x = {2, 16, 5, 5}, .w = {32, 16, 3, 3}, .stride = {2, 2}, .padding = {1, 1}};
const ConvCase kBlockedGroups{
    .x = {1, 32, 5, 5}, .w = {32, 16, 3, 3}, .padding = {1, 1}, .groups = 2};
const ConvCase kBlockedDepthwise{.x = {1, 16, 5, 5}, .w = {16, 1, 3, 3}, .groups = 16};

TEST(ConvOpTest, ForwardMatchesNaiveLoops) {
  for (const ConvCase& c : {kPlain, kStride2, kPadding1, kDilation2, kGroups2, kDepthwise,
                            kAsymmetric, kBlocked, kBlockedGroups, kBlockedDepthwise}) {
    SCOPED_TRACE(absl::StrCat("x ", ShapeToString(c.x), " w ", ShapeToString(c.w)));
    ExpectChainMatchesReference(c.x, {c});
  }
}

// conv (C = 16 -> 32) -> conv (32 -> 8): the intermediate stays blocked; a wrong reorder of the
// activations or of the weights would show here.
TEST(ConvOpTest, BlockedChainMatchesNaiveLoops) {
  ExpectChainMatchesReference({2, 16, 6, 6}, {{.w = {32, 16, 3, 3}, .padding = {1, 1}},
                                              {.w = {8, 32, 3, 3}, .stride = {2, 2}}});
}

// The first conv of a net: plain C = 3 in, blocked C = 16 out, then a blocked conv.
TEST(ConvOpTest, PlainToBlockedChainMatchesNaiveLoops) {
  ExpectChainMatchesReference({2, 3, 7, 7}, {{.w = {16, 3, 3, 3}, .padding = {1, 1}},
                                             {.w = {16, 16, 3, 3}, .stride = {2, 2}}});
}

// Nor do their weights when they are parameters: those are kept in the native weight layout
// where the channel counts allow it.
TEST(ConvOpTest, ConsecutiveConvsDoNotReorderBetweenThem) {
  auto graph = std::make_unique<Graph>();
  Builder b(graph.get());
  Value* h = b.Op1("Conv2D", {b.Input("x", {1, 3, 6, 6}), b.Parameter("w1", {16, 3, 3, 3})});
  h = b.Op1("Conv2D", {h, b.Parameter("w2", {32, 16, 3, 3})});
  graph->AddOutput("y", h, OutputKind::kResult);
  ASSERT_TRUE(b.status().ok()) << b.status();
  auto executor = Compile(std::move(graph), {});
  ASSERT_TRUE(executor.ok()) << executor.status();
  std::vector<const Node*> convs, reorders;
  for (const auto& node : (*executor)->graph().nodes()) {
    if (node->op->name() == "Conv2D") convs.push_back(node.get());
    if (node->op->name() == "Reorder") reorders.push_back(node.get());
  }
  ASSERT_EQ(convs.size(), 2u);
  ASSERT_EQ(reorders.size(), 1u);  // only the result, back to plain
  EXPECT_EQ(reorders[0]->inputs[0]->producer, convs[1]);
  EXPECT_EQ(convs[0]->inputs[0]->layout, Layout::kPlain);  // C = 3
  EXPECT_EQ(convs[0]->inputs[1]->layout, Layout::kPlain);  // I = 3
  EXPECT_EQ(convs[1]->inputs[0]->producer, convs[0]);
  EXPECT_EQ(convs[1]->inputs[0]->layout, NativeBlockedLayout());
  EXPECT_EQ(convs[1]->inputs[1]->layout, NativeWeightLayout());
}

void ExpectConvGradients(const ConvCase& c) {
  ExpectOpGradientsMatch("Conv2D", {{.name = "x", .shape = c.x}, {.name = "w", .shape = c.w}},
                         c.attrs());
}

TEST(ConvOpTest, GradientPlain) { ExpectConvGradients(kPlain); }
TEST(ConvOpTest, GradientStride2) { ExpectConvGradients(kStride2); }
TEST(ConvOpTest, GradientPadding1) { ExpectConvGradients(kPadding1); }
TEST(ConvOpTest, GradientDilation2) { ExpectConvGradients(kDilation2); }
TEST(ConvOpTest, GradientGroups2) { ExpectConvGradients(kGroups2); }
TEST(ConvOpTest, GradientDepthwise) { ExpectConvGradients(kDepthwise); }
TEST(ConvOpTest, GradientAsymmetric) { ExpectConvGradients(kAsymmetric); }
TEST(ConvOpTest, GradientBlockedDepthwise) { ExpectConvGradients(kBlockedDepthwise); }

// The first conv of a net: plain C = 3 in, blocked out (and dy in, plain dx out).
TEST(ConvOpTest, GradientPlainToBlocked) {
  ExpectConvGradients({.x = {1, 3, 4, 4}, .w = {16, 3, 3, 3}, .padding = {1, 1}});
}

// Weights as a parameter with 16 channels in and out: kept in the native weight layout, so the
// forward reads them blocked, the input gradient reorders them and the filter gradient is
// written blocked.
TEST(ConvOpTest, GradientBlockedWeightParameter) {
  ExpectOpGradientsMatch("Conv2D",
                         {{.name = "x", .shape = {1, 16, 3, 3}},
                          {.name = "w", .shape = {16, 16, 3, 3}, .role = InputRole::kParameter}},
                         {{"padding", Shape{1, 1}}});
}

// 3x3 windows over 2x2 maps (ResNet's last stage at 64x64): with AVX2 oneDNN has no direct
// filter-gradient kernel, so the activations stay plain and the filter gradient is one matmul over
// the batch, reordered into the blocked layout the weights are kept in (with AVX-512 all of it
// stays blocked; CI runs both).
TEST(ConvOpTest, GradientOverTwoByTwoMapsIntoBlockedWeights) {
  ExpectOpGradientsMatch("Conv2D",
                         {{.name = "x", .shape = {2, 16, 2, 2}},
                          {.name = "w", .shape = {16, 16, 3, 3}, .role = InputRole::kParameter}},
                         {{"padding", Shape{1, 1}}});
}

// conv (16 -> 32, 1x1) -> grouped conv (32 -> 16, 3x3, stride 2, padding 1): every gradient
// passes through blocked activations. Kept small: the check perturbs each element.
TEST(ConvOpTest, GradientBlockedChain) {
  ExpectGradientsMatch(
      {{.name = "x", .shape = {1, 16, 3, 3}},
       {.name = "w1", .shape = {32, 16, 1, 1}},
       {.name = "w2", .shape = {16, 2, 3, 3}}},
      [](Builder& b, const std::vector<Value*>& in) {
        Value* h = b.Op1("Conv2D", {in[0], in[1]});
        Attrs attrs = {{"stride", Shape{2, 2}}, {"padding", Shape{1, 1}}, {"groups", int64_t{16}}};
        return std::vector<Value*>{b.Op1("Conv2D", {h, in[2]}, attrs)};
      });
}

TEST(ConvOpTest, TrainingStepAllocatesNothing) {
  auto graph = std::make_unique<Graph>();
  Builder b(graph.get());
  Value* h = b.Op1("Conv2D", {b.Input("x", {2, 3, 8, 8}), b.Parameter("w1", {16, 3, 3, 3})},
                   {{"padding", Shape{1, 1}}});
  h = b.Op1("Conv2D", {h, b.Parameter("w2", {16, 8, 3, 3})}, {{"groups", int64_t{2}}});
  ASSERT_TRUE(b.status().ok()) << b.status();
  graph->AddOutput("y", h, OutputKind::kResult);
  b.Input("dy", h->shape());
  auto executor = Compile(std::move(graph), {.autodiff = AutodiffOptions{.seeds = {{"y", "dy"}}}});
  ASSERT_TRUE(executor.ok()) << executor.status();
  ASSERT_TRUE((*executor)->Run().ok());
  const int64_t before = CpuAllocatorStats().allocations;
  ASSERT_TRUE((*executor)->Run().ok());
  EXPECT_EQ(CpuAllocatorStats().allocations, before);
}

// The Builder's message for Conv2D on x and w with `attrs`.
std::string ConvError(const Shape& x, const Shape& w, const Attrs& attrs = {}) {
  Graph graph;
  Builder b(&graph);
  EXPECT_EQ(b.Op1("Conv2D", {b.Input("x", x), b.Input("w", w)}, attrs), nullptr);
  return std::string(b.status().message());
}

TEST(ConvOpTest, ShapeErrorsNameTheOpShapesAndProblem) {
  std::string message = ConvError({2, 3, 7, 7}, {4, 5, 3, 3});
  EXPECT_NE(message.find("Conv2D"), std::string::npos) << message;
  EXPECT_NE(message.find("f32[2, 3, 7, 7], f32[4, 5, 3, 3]"), std::string::npos) << message;
  EXPECT_NE(message.find("w has 5 input channels per group, x has C = 3"), std::string::npos)
      << message;

  message = ConvError({2, 3, 7, 7}, {4, 1, 3, 3}, {{"groups", int64_t{2}}});
  EXPECT_NE(message.find("groups = 2 does not divide the input channels C = 3"), std::string::npos)
      << message;

  message = ConvError({2, 4, 7, 7}, {5, 2, 3, 3}, {{"groups", int64_t{2}}});
  EXPECT_NE(message.find("groups = 2 does not divide the output channels O = 5"), std::string::npos)
      << message;

  message = ConvError({2, 3, 4, 6}, {4, 3, 3, 3}, {{"dilation", Shape{2, 1}}});
  EXPECT_NE(message.find("kernel 3x3 spans 5 with dilation [2, 1], more than the padded input "
                         "height 4"),
            std::string::npos)
      << message;

  message = ConvError({3, 7, 7}, {4, 3, 3, 3});
  EXPECT_NE(message.find("x must be 4-D (N, C, H, W), got [3, 7, 7]"), std::string::npos)
      << message;

  message = ConvError({2, 3, 7, 7}, {4, 3, 3, 3}, {{"stride", Shape{0, 1}}});
  EXPECT_NE(message.find("stride must be [h, w] with entries >= 1, got [0, 1]"), std::string::npos)
      << message;
}

TEST(ConvOpTest, BackpropInputChecksDyAgainstTheConvolution) {
  Graph graph;
  Builder b(&graph);
  EXPECT_EQ(b.Op1("Conv2DBackpropInput", {b.Input("dy", {2, 4, 6, 6}), b.Input("w", {4, 3, 3, 3})},
                  {{"input_shape", Shape{2, 3, 7, 7}}}),
            nullptr);
  std::string message(b.status().message());
  EXPECT_NE(message.find("Conv2DBackpropInput"), std::string::npos) << message;
  EXPECT_NE(message.find("dy must be [2, 4, 5, 5] for x [2, 3, 7, 7] and w [4, 3, 3, 3], got "
                         "f32[2, 4, 6, 6]"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace lockstep
