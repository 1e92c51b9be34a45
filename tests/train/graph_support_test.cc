// The graph features the front end relies on: extra passes after Autodiff, an executor sharing
// another's parameter and state memory, per-kernel profiling, no gradient buffer for forward-only
// graphs, and plain layouts for convolution backprops that oneDNN has no fast blocked kernel for.

#include <gtest/gtest.h>

#include <algorithm>

#include "graph/builder.h"
#include "graph/compile.h"
#include "ops/cpu/cpu_layouts.h"

namespace lockstep {
namespace {

// y = relu(x w) + b with parameters w (4, 3) (named `w_name`) and b (3), and state s (3).
std::unique_ptr<Graph> SmallNet(const std::string& w_name = "w", int64_t w_rows = 4) {
  auto graph = std::make_unique<Graph>();
  Builder b(graph.get());
  Value* h = b.Op1("MatMul", {b.Input("x", {2, w_rows}), b.Parameter(w_name, {w_rows, 3})});
  Value* y = b.Op1("BiasAdd", {b.Op1("Relu", {h}), b.Parameter("b", {3})});
  b.State("s", {3});
  graph->AddOutput("y", y, OutputKind::kResult);
  EXPECT_TRUE(b.status().ok()) << b.status();
  return graph;
}

TEST(ShareBuffersTest, SecondExecutorUsesTheSameMemory) {
  auto first = Compile(SmallNet(), {});
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = Compile(SmallNet(), {.share_buffers_with = first->get()});
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ((*first)->parameters().raw_data(), (*second)->parameters().raw_data());
  EXPECT_EQ((*first)->state().raw_data(), (*second)->state().raw_data());
  (*first)->Input("w")->data<float>()[5] = 2.5f;
  EXPECT_EQ((*second)->Input("w")->data<float>()[5], 2.5f);
  // Forward-only graphs get no gradient buffer.
  EXPECT_EQ((*second)->gradients().nbytes(), 0u);
}

TEST(ShareBuffersTest, RefusesGraphsWhoseParametersDiffer) {
  auto first = Compile(SmallNet(), {});
  ASSERT_TRUE(first.ok()) << first.status();
  auto renamed = Compile(SmallNet("v"), {.share_buffers_with = first->get()});
  ASSERT_FALSE(renamed.ok());
  EXPECT_NE(renamed.status().message().find("parameter 'v'"), std::string::npos)
      << renamed.status();
  auto reshaped = Compile(SmallNet("w", 5), {.share_buffers_with = first->get()});
  ASSERT_FALSE(reshaped.ok());
  EXPECT_NE(reshaped.status().message().find("f32[5, 3]"), std::string::npos) << reshaped.status();
}

// A pass that records the gradient outputs it finds.
class RecordingPass : public Pass {
 public:
  explicit RecordingPass(std::vector<std::string>* seen) : seen_(seen) {}
  absl::string_view name() const override { return "Recording"; }
  absl::Status Run(Graph& graph, PassContext&) override {
    for (const GraphOutput& output : graph.outputs()) {
      if (output.kind == OutputKind::kGradient) seen_->push_back(output.name);
    }
    return absl::OkStatus();
  }

 private:
  std::vector<std::string>* seen_;
};

TEST(CompileTest, AfterAutodiffPassesSeeTheGradients) {
  auto graph = std::make_unique<Graph>();
  Builder b(graph.get());
  Value* logits = b.Op1("MatMul", {b.Input("x", {2, 4}), b.Parameter("w", {4, 3})});
  graph->AddOutput("loss", b.Op("SoftmaxCrossEntropy", {logits, b.Input("l", {2}, DType::kI32)})[0],
                   OutputKind::kResult);
  std::vector<std::string> seen;
  CompileOptions options{.autodiff = AutodiffOptions{}};
  options.after_autodiff.push_back([&seen] { return std::make_unique<RecordingPass>(&seen); });
  ASSERT_TRUE(Compile(std::move(graph), options).ok());
  EXPECT_EQ(seen, std::vector<std::string>{"grad/w"});
}

TEST(ProfileTest, TimesEveryKernelWhileOn) {
  auto executor = Compile(SmallNet(), {});
  ASSERT_TRUE(executor.ok()) << executor.status();
  ASSERT_TRUE((*executor)->Run().ok());
  for (const auto& t : (*executor)->Profile()) EXPECT_EQ(t.seconds, 0.0) << t.node->name;
  (*executor)->EnableProfiling(true);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*executor)->Run().ok());
  std::vector<Executor::NodeTime> profile = (*executor)->Profile();
  ASSERT_EQ(profile.size(), 3u);  // MatMul, Relu, BiasAdd
  EXPECT_EQ(profile[0].node->op->name(), "MatMul");
  for (const auto& t : profile) EXPECT_GT(t.seconds, 0.0) << t.node->name;
  (*executor)->ResetProfile();
  for (const auto& t : (*executor)->Profile()) EXPECT_EQ(t.seconds, 0.0) << t.node->name;
}

// x (N, 8, H, W) -> 1x1 conv to `mid` channels -> k x k conv (padding p) to `out` channels ->
// loss; returns the activation layouts (x, y) of the second conv's two backprop nodes.
std::vector<std::vector<Layout>> BackpropLayouts(Shape x, int64_t mid, int64_t out, int64_t k,
                                                 int64_t p) {
  auto graph = std::make_unique<Graph>();
  Builder b(graph.get());
  Value* h = b.Op1("Conv2D", {b.Input("x", x), b.Parameter("w0", {mid, x[1], 1, 1})});
  b.SetNamePrefix("second/");
  h = b.Op1("Conv2D", {h, b.Parameter("w1", {out, mid, k, k})},
            {{"padding", std::vector<int64_t>{p, p}}});
  Value* logits = b.Op1("Flatten", {b.Op1("GlobalAvgPool", {h})});
  graph->AddOutput("loss",
                   b.Op("SoftmaxCrossEntropy", {logits, b.Input("l", {x[0]}, DType::kI32)})[0],
                   OutputKind::kResult);
  auto executor = Compile(std::move(graph), {.autodiff = AutodiffOptions{}});
  EXPECT_TRUE(executor.ok()) << executor.status();
  std::vector<std::vector<Layout>> layouts;
  if (!executor.ok()) return layouts;
  for (const auto& node : (*executor)->graph().nodes()) {
    if (!node->op->name().starts_with("Conv2DBackprop")) continue;
    if (node->name.find("second/") == std::string::npos) continue;
    const bool filter = node->op->name() == "Conv2DBackpropFilter";
    layouts.push_back({filter ? node->inputs[0]->layout : node->output()->layout,
                       filter ? node->inputs[1]->layout : node->inputs[0]->layout});
  }
  EXPECT_EQ(layouts.size(), 2u);
  return layouts;
}

// oneDNN has only its reference backward kernels for blocked activations next to 6 channels
// (LeNet's conv2), and with AVX2 for the filter gradient of 3x3 windows over 2x2 maps (its AVX-512
// kernel takes them): those nodes run plain. Where the fast kernels exist, the activations stay
// blocked.
TEST(ConvBackpropLayoutTest, PlainWhereOneDnnHasNoFastBlockedKernel) {
  const bool avx512 =
      NativeBlockedLayout() == cpu::BlockedActivations(16);  // oneDNN's AVX-512 kernels
  const std::vector<Layout> plain = {Layout::kPlain, Layout::kPlain};
  const std::vector<Layout> blocked = {NativeBlockedLayout(), NativeBlockedLayout()};
  EXPECT_EQ(BackpropLayouts({2, 8, 14, 14}, 6, 16, 5, 0),
            (std::vector<std::vector<Layout>>{plain, plain}));
  std::vector<std::vector<Layout>> small_maps = BackpropLayouts({8, 8, 2, 2}, 512, 512, 3, 1);
  EXPECT_EQ(std::count(small_maps.begin(), small_maps.end(), plain), avx512 ? 0 : 1);
  EXPECT_EQ(std::count(small_maps.begin(), small_maps.end(), blocked), avx512 ? 2 : 1);
  EXPECT_EQ(BackpropLayouts({2, 8, 8, 8}, 16, 16, 3, 1),
            (std::vector<std::vector<Layout>>{blocked, blocked}));
}

}  // namespace
}  // namespace lockstep
