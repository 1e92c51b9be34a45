#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>

#include "graph/builder.h"
#include "graph/compile.h"
#include "ops/cpu/cpu_layouts.h"

namespace lockstep {
namespace {

// The native block follows the ISA oneDNN dispatches to, which DNNL_MAX_CPU_ISA caps, not what
// the CPU could run: 16 channels with oneDNN's AVX-512 kernels, 8 below them.
TEST(CpuLayoutsTest, NativeBlockFollowsOneDnnsEffectiveIsa) {
  const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  const bool avx512 = isa == dnnl::cpu_isa::avx512_core || isa == dnnl::cpu_isa::avx512_core_vnni ||
                      isa == dnnl::cpu_isa::avx512_core_bf16 ||
                      isa == dnnl::cpu_isa::avx512_core_amx;
  EXPECT_EQ(NativeBlockedLayout(), cpu::BlockedActivations(avx512 ? 16 : 8))
      << "oneDNN ISA 0x" << std::hex << static_cast<int>(isa);
  EXPECT_EQ(NativeWeightLayout(), cpu::BlockedWeights(avx512 ? 16 : 8));
}

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

// A convolution weight parameter is kept in the native weight layout (OIhw8i8o or OIhw16i16o):
// element (o, i, h, w) of an (O, I, KH, KW) tensor sits at
// ((o/B * I/B + i/B) * KH*KW + h*KW + w) * B*B + (i%B)*B + o%B. The executor refuses a plain view
// of it and reads and writes plain copies.
TEST(LayoutTest, ConvWeightParametersAreStoredBlockedAndReadPlain) {
  const Shape x_shape = {1, 32, 4, 4};
  const Shape w_shape = {32, 32, 3, 3};
  auto graph = std::make_unique<Graph>();
  Builder b(graph.get());
  Value* y = b.Op1("Conv2D", {b.Input("x", x_shape), b.Parameter("w", w_shape)});
  ASSERT_TRUE(b.status().ok()) << b.status();
  graph->AddOutput("y", y, OutputKind::kResult);
  auto executor = Compile(std::move(graph), {});
  ASSERT_TRUE(executor.ok()) << executor.status();
  const Value& stored = *(*executor)->graph().FindInput("w")->output();
  ASSERT_EQ(stored.layout, NativeWeightLayout());

  Tensor plain = Tensor::Empty(w_shape, DType::kF32);
  for (int64_t i = 0; i < plain.numel(); ++i) plain.data<float>()[i] = static_cast<float>(i);
  ASSERT_TRUE((*executor)->WriteInput("w", plain).ok());
  const int64_t block = NativeWeightLayout() == cpu::BlockedWeights(16) ? 16 : 8;
  const int64_t in = w_shape[1], window = w_shape[2] * w_shape[3];
  const float* raw = static_cast<const float*>((*executor)->parameters().raw_data()) +
                     stored.alloc.offset / sizeof(float);
  for (int64_t o : {0, 1, 9, 31}) {
    for (int64_t i : {0, 2, 17, 31}) {
      for (int64_t k : {0, 4, 8}) {
        const int64_t offset =
            ((o / block * (in / block) + i / block) * window + k) * block * block +
            (i % block) * block + o % block;
        ASSERT_EQ(raw[offset], static_cast<float>((o * in + i) * window + k))
            << "o " << o << " i " << i << " k " << k;
      }
    }
  }
  Tensor back = *(*executor)->ReadInput("w");
  EXPECT_EQ(std::memcmp(back.raw_data(), plain.raw_data(), plain.nbytes()), 0);
  absl::Status view = (*executor)->Input("w").status();
  EXPECT_NE(view.message().find("'w' is kept in layout " + std::string(LayoutName(stored.layout))),
            std::string::npos)
      << view;
  EXPECT_FALSE((*executor)->WriteInput("w", Tensor::Empty({32, 32}, DType::kF32)).ok());
}

// What the ranks agreed on decides how weights, their gradients and moments are stored; each
// rank's activations keep its native block. Agreeing on 8x8 weight blocks (an AVX2 host in the
// job) or on nothing stores the weights so on every CPU, and the step computes the same.
TEST(LayoutTest, SharedValuesTakeTheAgreedLayoutActivationsTheNativeOne) {
  const Shape x_shape = {2, 32, 6, 6};
  const Shape w_shape = {32, 32, 3, 3};
  Tensor x = Tensor::Empty(x_shape, DType::kF32);
  Tensor w = Tensor::Empty(w_shape, DType::kF32);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i % 7) - 3.0f;
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = static_cast<float>(i % 5) * 0.1f;
  std::vector<float> reference;
  for (const std::vector<Layout>& agreed :
       std::vector<std::vector<Layout>>{cpu::WeightLayoutOffer(), {cpu::BlockedWeights(8)}, {}}) {
    auto graph = std::make_unique<Graph>();
    Builder b(graph.get());
    Value* y = b.Op1("Relu", {b.Op1("Conv2D", {b.Input("x", x_shape), b.Parameter("w", w_shape)},
                                    {{"padding", std::vector<int64_t>{1, 1}}})});
    ASSERT_TRUE(b.status().ok()) << b.status();
    graph->AddOutput("y", y, OutputKind::kResult);
    auto executor = Compile(std::move(graph), {.shared_layouts = agreed});
    ASSERT_TRUE(executor.ok()) << executor.status();
    const Layout stored = (*executor)->graph().FindInput("w")->output()->layout;
    EXPECT_EQ(stored, agreed.empty() ? Layout::kPlain : agreed.front());
    EXPECT_EQ(y->producer->inputs[0]->layout, NativeBlockedLayout());  // the Relu reads the conv

    ASSERT_TRUE((*executor)->WriteInput("w", w).ok());
    ASSERT_TRUE((*executor)->WriteInput("x", x).ok());
    ASSERT_TRUE((*executor)->Run().ok());
    Tensor out = *(*executor)->ReadOutput("y");
    std::vector<float> values(out.data<float>(), out.data<float>() + out.numel());
    if (reference.empty()) reference = values;
    for (size_t i = 0; i < values.size(); ++i) {
      ASSERT_NEAR(values[i], reference[i], 1e-5f * std::max(1.0f, std::abs(reference[i]))) << i;
    }
  }
}

}  // namespace
}  // namespace lockstep
