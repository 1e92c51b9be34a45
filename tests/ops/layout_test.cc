#include <gtest/gtest.h>

#include "graph/builder.h"
#include "graph/compile.h"

namespace lockstep {
namespace {

// Plain -> blocked (nChw8c or nChw16c) -> Relu -> plain: the Relu works in the blocked layout
// (element-wise ops follow their input) without extra reorders, and the round trip gives back
// ReLU(x).
TEST(LayoutTest, ReorderRoundTripThroughAnElementwiseOp) {
  const Shape shape = {2, 32, 3, 2};
  auto graph = std::make_unique<Graph>();
  Builder b(graph.get());
  Value* x = b.Input("x", shape);
  const std::string native = LayoutName(NativeBlockedLayout());
  Value* blocked = b.Op1("Reorder", {x}, {{"layout", native}});
  Value* relu = b.Op1("Relu", {blocked});
  Value* back = b.Op1("Reorder", {relu}, {{"layout", std::string("plain")}});
  ASSERT_TRUE(b.status().ok()) << b.status();
  graph->AddOutput("back", back, OutputKind::kResult);
  auto executor = Compile(std::move(graph), {});
  ASSERT_TRUE(executor.ok()) << executor.status();

  int reorders = 0;
  for (const auto& node : (*executor)->graph().nodes()) {
    reorders += node->op->name() == "Reorder";
    if (node->op->name() == "Relu") {
      EXPECT_EQ(node->output()->layout, NativeBlockedLayout());
    }
  }
  EXPECT_EQ(reorders, 2);

  Tensor in = *(*executor)->Input("x");
  for (int64_t i = 0; i < in.numel(); ++i) in.data<float>()[i] = static_cast<float>(i % 7) - 3;
  ASSERT_TRUE((*executor)->Run().ok());
  Tensor out = *(*executor)->Output("back");
  for (int64_t i = 0; i < in.numel(); ++i) {
    ASSERT_EQ(out.data<float>()[i], std::max(0.0f, in.data<float>()[i])) << i;
  }
}

}  // namespace
}  // namespace lockstep
