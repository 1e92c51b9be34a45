// Every CPU kernel in bf16 and f16 against its float32 twin on the same (rounded) inputs, natively
// where the CPU computes the dtype and through the float32 fallback elsewhere (f16 always; bf16
// when the suite runs again under DNNL_MAX_CPU_ISA=AVX2). Also Cast, and the dtype rules of
// shape inference for mixed precision.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/backend.h"
#include "core/half.h"
#include "graph/builder.h"
#include "graph/compile.h"
#include "graph/kernel.h"
#include "ops/cpu/cpu_layouts.h"
#include "ops/cpu/vector_loop.h"
#include "tests/testing/grad_check.h"

namespace lockstep {
namespace {

using testing::GradCheckInput;
using testing::RunForward;

std::string Name(DType dtype) { return DTypeName(dtype); }

// An output's rounding in `dtype`, relative to max(1, max |reference|): one unit in the last
// place, with room for the float32 sums each kernel does in its own order.
double Tolerance(DType dtype) { return dtype == DType::kBF16 ? 1e-2 : 1e-3; }

// `v` in `dtype`; for the float32 twin, rounded to `dtype` and back, so both see the same values.
Value* Low(Builder& b, Value* v, DType dtype, bool twin) {
  Value* low = b.Op1("Cast", {v}, {{"dtype", Name(dtype)}});
  return twin ? b.Op1("Cast", {low}, {{"dtype", std::string("f32")}}) : low;
}

// Outputs in bf16 or f16 cast back into float32 (the harness reads float32).
std::vector<Value*> Wide(Builder& b, std::vector<Value*> outputs) {
  for (Value*& output : outputs) {
    if (output != nullptr && IsLowPrecision(output->dtype())) {
      output = b.Op1("Cast", {output}, {{"dtype", std::string("f32")}});
    }
  }
  return outputs;
}

// The op over `in`, the inputs listed in `low` in `dtype`.
std::vector<Value*> BuildOp(Builder& b, const std::vector<Value*>& in, const std::string& op,
                            const Attrs& attrs, DType dtype, const std::vector<int>& low,
                            bool twin) {
  std::vector<Value*> args = in;
  for (int i : low) args[i] = Low(b, in[i], dtype, twin);
  return Wide(b, b.Op(op, args, attrs));
}

void ExpectClose(const std::vector<std::vector<float>>& actual,
                 const std::vector<std::vector<float>>& expected, double tolerance) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t k = 0; k < actual.size(); ++k) {
    ASSERT_EQ(actual[k].size(), expected[k].size()) << "output " << k;
    double scale = 1.0;
    for (float e : expected[k]) scale = std::max(scale, std::abs(static_cast<double>(e)));
    int failures = 0;
    for (size_t i = 0; i < actual[k].size() && failures < 5; ++i) {
      if (!(std::abs(actual[k][i] - expected[k][i]) <= tolerance * scale)) {
        ++failures;
        ADD_FAILURE() << "output " << k << " element " << i << ": got " << actual[k][i]
                      << ", float32 twin " << expected[k][i] << " (scale " << scale << ")";
      }
    }
  }
}

// `op` with the inputs in `low` in bf16 and in f16 matches its float32 twin.
void ExpectMatchesFloat32(const std::string& op, const std::vector<GradCheckInput>& inputs,
                          const Attrs& attrs, const std::vector<int>& low) {
  for (DType dtype : {DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(Name(dtype));
    auto actual = RunForward(inputs, [&](Builder& b, const std::vector<Value*>& in) {
      return BuildOp(b, in, op, attrs, dtype, low, /*twin=*/false);
    });
    auto expected = RunForward(inputs, [&](Builder& b, const std::vector<Value*>& in) {
      return BuildOp(b, in, op, attrs, dtype, low, /*twin=*/true);
    });
    ASSERT_FALSE(expected.empty());
    ExpectClose(actual, expected, Tolerance(dtype));
  }
}

GradCheckInput Random(const std::string& name, const Shape& shape, uint64_t seed) {
  return {.name = name, .shape = shape, .values = testing::NormalValues(shape, seed)};
}

const Attrs kConv = {{"stride", std::vector<int64_t>{1, 1}},
                     {"padding", std::vector<int64_t>{1, 1}},
                     {"dilation", std::vector<int64_t>{1, 1}},
                     {"groups", int64_t{1}}};

Attrs With(Attrs attrs, const std::string& name, AttrValue value) {
  attrs.Set(name, std::move(value));
  return attrs;
}

// 16 channels: blocked layouts with AVX-512 and AVX2 alike; 3: plain.
TEST(LowPrecisionTest, Convolutions) {
  for (int64_t c : {16, 3}) {
    SCOPED_TRACE(c);
    const Shape x{2, c, 6, 6}, w{16, c, 3, 3}, y{2, 16, 6, 6};
    ExpectMatchesFloat32("Conv2D", {Random("x", x, 1), Random("w", w, 2)}, kConv, {0, 1});
    ExpectMatchesFloat32("Conv2DBackpropInput", {Random("dy", y, 3), Random("w", w, 4)},
                         With(kConv, "input_shape", x), {0, 1});
    ExpectMatchesFloat32("Conv2DBackpropFilter", {Random("x", x, 5), Random("dy", y, 6)},
                         With(kConv, "filter_shape", w), {0, 1});
  }
}

std::vector<GradCheckInput> NormInputs(const Shape& x) {
  const Shape c{x[1]};
  std::vector<float> var = testing::NormalValues(c, 15);
  for (float& v : var) v = 1.0f + v * v;
  return {Random("x", x, 11),
          Random("gamma", c, 12),
          Random("beta", c, 13),
          {.name = "mean",
           .shape = c,
           .differentiable = false,
           .role = InputRole::kState,
           .values = testing::NormalValues(c, 14)},
          {.name = "var",
           .shape = c,
           .differentiable = false,
           .role = InputRole::kState,
           .values = var}};
}

// The shapes of the batch-norm tests: 16 channels (nChw16c with AVX-512, nChw8c with AVX2), 8
// (nChw8c with AVX2, else plain), and plain ones, 3 channels of 5 x 5 (rows with a tail after the
// vectors of 16) and (N, C).
const Shape kNormShapes[] = {{2, 16, 4, 4}, {4, 8, 3, 3}, {2, 3, 5, 5}, {6, 3}};

// bf16 data with float32 scale and shift (O2) and with both low (O3); statistics in float32, the
// running averages included.
TEST(LowPrecisionTest, BatchNormFamily) {
  for (const Shape& x : kNormShapes) {
    SCOPED_TRACE(ShapeToString(x));
    for (const std::vector<int>& low : {std::vector<int>{0}, std::vector<int>{0, 1, 2}}) {
      SCOPED_TRACE(low.size());
      ExpectMatchesFloat32("BatchNorm", NormInputs(x), {}, low);
      ExpectMatchesFloat32("BatchNormInference", NormInputs(x), {}, low);
    }
    // (x, gamma, saved_mean, saved_var, dy): saved statistics stay float32.
    const std::vector<GradCheckInput> norm = NormInputs(x);
    const std::vector<GradCheckInput> grad = {norm[0], norm[1], Random("saved_mean", {x[1]}, 21),
                                              norm[4], Random("dy", x, 22)};
    for (const std::vector<int>& low : {std::vector<int>{0, 4}, std::vector<int>{0, 1, 4}}) {
      ExpectMatchesFloat32("BatchNormGrad", grad, {}, low);
    }
  }
}

// Forward and backward together: the backward reads the forward's ReLU mask. Scale and shift
// float32 (O2) and in the data's dtype (O3).
TEST(LowPrecisionTest, BatchNormReluForwardAndBackward) {
  for (const Shape& x : kNormShapes) {
    SCOPED_TRACE(ShapeToString(x));
    std::vector<GradCheckInput> inputs = NormInputs(x);
    inputs.push_back(Random("dy", x, 31));
    for (DType dtype : {DType::kBF16, DType::kF16}) {
      for (bool o3 : {false, true}) {
        SCOPED_TRACE(Name(dtype) + (o3 ? " O3" : " O2"));
        auto build = [dtype, o3](bool twin) {
          return [dtype, o3, twin](Builder& b, const std::vector<Value*>& in) {
            Value* lx = Low(b, in[0], dtype, twin);
            Value* gamma = o3 ? Low(b, in[1], dtype, twin) : in[1];
            Value* beta = o3 ? Low(b, in[2], dtype, twin) : in[2];
            std::vector<Value*> f = b.Op("BatchNormRelu", {lx, gamma, beta, in[3], in[4]});
            std::vector<Value*> g = b.Op("BatchNormReluGrad",
                                         {lx, gamma, f[1], f[2], Low(b, in[5], dtype, twin), f[5]});
            return Wide(b, {f[0], f[1], f[2], f[3], f[4], g[0], g[1], g[2]});
          };
        };
        ExpectClose(RunForward(inputs, build(false)), RunForward(inputs, build(true)),
                    Tolerance(dtype));
      }
    }
  }
}

TEST(LowPrecisionTest, Pooling) {
  const Shape x{2, 16, 6, 6}, y{2, 16, 3, 3};
  const Attrs pool = {{"kernel", Shape{3, 3}}, {"stride", Shape{2, 2}}, {"padding", Shape{1, 1}}};
  ExpectMatchesFloat32("MaxPool", {Random("x", x, 41)}, pool, {0});
  ExpectMatchesFloat32("AvgPool", {Random("x", x, 42)}, pool, {0});
  ExpectMatchesFloat32("GlobalAvgPool", {Random("x", x, 43)}, {}, {0});
  ExpectMatchesFloat32("MaxPoolGrad", {Random("x", x, 44), Random("dy", y, 45)}, pool, {0, 1});
  ExpectMatchesFloat32("AvgPoolGrad", {Random("dy", y, 46)}, With(pool, "input_shape", x), {0});
  ExpectMatchesFloat32("GlobalAvgPoolGrad", {Random("dy", {2, 16, 1, 1}, 47)}, {{"input_shape", x}},
                       {0});
}

TEST(LowPrecisionTest, MaxPoolWithArgmaxAndItsGradient) {
  const Shape x{2, 16, 6, 6};
  const Attrs pool = {{"kernel", Shape{2, 2}}, {"stride", Shape{2, 2}}};
  const std::vector<GradCheckInput> inputs = {Random("x", x, 51), Random("dy", {2, 16, 3, 3}, 52)};
  for (DType dtype : {DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(Name(dtype));
    auto build = [&](bool twin) {
      return [&, twin](Builder& b, const std::vector<Value*>& in) {
        std::vector<Value*> f = b.Op("MaxPoolWithArgmax", {Low(b, in[0], dtype, twin)}, pool);
        Value* dx = b.Op1("MaxPoolGradWithArgmax", {Low(b, in[1], dtype, twin), f[1]},
                          With(pool, "input_shape", x));
        return Wide(b, {f[0], dx});
      };
    };
    ExpectClose(RunForward(inputs, build(false)), RunForward(inputs, build(true)),
                Tolerance(dtype));
  }
}

TEST(LowPrecisionTest, MatMul) {
  for (bool transpose_b : {false, true}) {
    ExpectMatchesFloat32(
        "MatMul",
        {Random("a", {5, 7}, 61), Random("b", transpose_b ? Shape{3, 7} : Shape{7, 3}, 62)},
        {{"transpose_b", transpose_b}}, {0, 1});
  }
}

TEST(LowPrecisionTest, ElementwiseFamily) {
  const Shape s{2, 16, 3, 3};
  ExpectMatchesFloat32("Add", {Random("a", s, 71), Random("b", s, 72)}, {}, {0, 1});
  ExpectMatchesFloat32("AddRelu", {Random("a", s, 73), Random("b", s, 74)}, {}, {0, 1});
  ExpectMatchesFloat32("Relu", {Random("x", s, 75)}, {}, {0});
  ExpectMatchesFloat32("ReluGrad", {Random("x", s, 76), Random("dy", s, 77)}, {}, {0, 1});
  ExpectMatchesFloat32("AddReluGrad",
                       {Random("x", s, 78), Random("dy1", s, 79), Random("dy2", s, 80)}, {},
                       {0, 1, 2});
  ExpectMatchesFloat32("Scale", {Random("x", s, 81)}, {{"scale", -0.375}}, {0});
  ExpectMatchesFloat32("BiasAdd", {Random("x", s, 82), Random("bias", {16}, 83)}, {}, {0, 1});
  ExpectMatchesFloat32("BiasAddGrad", {Random("dy", s, 84)}, {}, {0});
  ExpectMatchesFloat32("Identity", {Random("x", s, 85)}, {}, {0});
  ExpectMatchesFloat32("Flatten", {Random("x", s, 86)}, {}, {0});
  ExpectMatchesFloat32("Reshape", {Random("x", s, 87)}, {{"shape", Shape{2, 144}}}, {0});
}

TEST(LowPrecisionTest, FillInEveryDtype) {
  for (const char* dtype : {"bf16", "f16"}) {
    auto outputs = RunForward({}, [&](Builder& b, const std::vector<Value*>&) {
      Value* fill =
          b.Op1("Fill", {}, {{"shape", Shape{3}}, {"value", 1.375}, {"dtype", std::string(dtype)}});
      return std::vector<Value*>{b.Op1("Cast", {fill}, {{"dtype", std::string("f32")}})};
    });
    ASSERT_EQ(outputs.size(), 1u);
    EXPECT_EQ(outputs[0], (std::vector<float>{1.375f, 1.375f, 1.375f})) << dtype;
  }
}

// Cast rounds to nearest even, as core/half.h does, through every pair of the three dtypes, and
// in the blocked layout of a convolution's output.
TEST(LowPrecisionTest, CastRoundTrips) {
  const Shape s{2, 16, 2, 2};
  GradCheckInput x = Random("x", s, 91);
  x.values[0] = 1.0f + 0x1p-8f;  // a bf16 tie: rounds to even, 1
  x.values[1] = 70000.0f;        // beyond binary16: infinity
  auto outputs = RunForward({x}, [](Builder& b, const std::vector<Value*>& in) {
    auto cast = [&](Value* v, const char* dtype) {
      return b.Op1("Cast", {v}, {{"dtype", std::string(dtype)}});
    };
    return std::vector<Value*>{cast(cast(in[0], "bf16"), "f32"), cast(cast(in[0], "f16"), "f32"),
                               cast(cast(cast(in[0], "bf16"), "f16"), "f32"),
                               cast(cast(cast(in[0], "f16"), "bf16"), "f32")};
  });
  ASSERT_EQ(outputs.size(), 4u);
  for (size_t i = 0; i < x.values.size(); ++i) {
    const float v = x.values[i];
    const float bf16 = ToFloat(FloatTo<BFloat16>(v));
    const float f16 = ToFloat(FloatTo<Float16>(v));
    EXPECT_EQ(outputs[0][i], bf16) << i;
    EXPECT_EQ(outputs[1][i], f16) << i;
    EXPECT_EQ(outputs[2][i], ToFloat(FloatTo<Float16>(bf16))) << i;
    EXPECT_EQ(outputs[3][i], ToFloat(FloatTo<BFloat16>(f16))) << i;
  }
  EXPECT_EQ(outputs[0][0], 1.0f);
  EXPECT_TRUE(std::isinf(outputs[1][1]));
}

// Through bf16 and f16 and back: the values (multiples of 1/8) and the steps are exact in both,
// so only dy's rounding on the way back separates the analytic gradient from the numeric one.
TEST(LowPrecisionTest, CastGradient) {
  for (const char* dtype : {"bf16", "f16"}) {
    SCOPED_TRACE(dtype);
    testing::ExpectGradientsMatch(
        {{.name = "x", .shape = {6}, .values = {-1.5f, -0.25f, 0.5f, 1.125f, 2.0f, 3.25f}}},
        [&](Builder& b, const std::vector<Value*>& in) {
          Value* low = b.Op1("Cast", {in[0]}, {{"dtype", std::string(dtype)}});
          Value* relu = b.Op1("Relu", {low});
          return std::vector<Value*>{b.Op1("Cast", {relu}, {{"dtype", std::string("f32")}})};
        },
        {.step = 0.125, .tolerance = 1e-2});
  }
}

TEST(LowPrecisionTest, BatchNormKeepsFloat32Statistics) {
  Graph graph;
  Builder b(&graph);
  Value* x = b.Input("x", {2, 16, 4, 4}, DType::kBF16);
  Value* gamma = b.Input("gamma", {16}, DType::kBF16);
  Value* beta = b.Input("beta", {16}, DType::kBF16);
  Value* mean = b.Input("mean", {16});
  Value* var = b.Input("var", {16});
  std::vector<Value*> out = b.Op("BatchNorm", {x, gamma, beta, mean, var});
  ASSERT_EQ(out.size(), 5u) << b.status();
  EXPECT_EQ(out[0]->dtype(), DType::kBF16);
  for (int i = 1; i < 5; ++i) EXPECT_EQ(out[i]->dtype(), DType::kF32) << i;
  std::vector<Value*> grad = b.Op("BatchNormGrad", {x, gamma, out[1], out[2], out[0]});
  ASSERT_EQ(grad.size(), 3u) << b.status();
  EXPECT_EQ(grad[0]->dtype(), DType::kBF16);
  EXPECT_EQ(grad[1]->dtype(), DType::kBF16);  // like gamma
}

TEST(LowPrecisionTest, DtypeErrorsNameTheOpAndTheInput) {
  Graph graph;
  Builder b(&graph);
  Value* x = b.Input("x", {2, 16, 4, 4}, DType::kBF16);
  Value* c32 = b.Input("c32", {16});
  Value* c16 = b.Input("c16", {16}, DType::kBF16);
  EXPECT_TRUE(b.Op("BatchNorm", {x, c32, c32, c16, c32}).empty());
  std::string message(b.status().message());
  EXPECT_NE(message.find("BatchNorm"), std::string::npos) << message;
  EXPECT_NE(message.find("running_mean"), std::string::npos) << message;
  EXPECT_NE(message.find("bf16[16]"), std::string::npos) << message;

  Graph graph2;
  Builder b2(&graph2);
  Value* y = b2.Input("y", {2, 16}, DType::kBF16);
  EXPECT_EQ(b2.Op1("BiasAdd", {y, b2.Input("bias", {16})}), nullptr);
  message = std::string(b2.status().message());
  EXPECT_NE(message.find("BiasAdd"), std::string::npos) << message;
  EXPECT_NE(message.find("f32[16]"), std::string::npos) << message;
}

// bf16 only where oneDNN runs AVX512-BF16 or AMX kernels; f16 nowhere; float32 everywhere.
TEST(LowPrecisionTest, CpuComputesNatively) {
  Backend& cpu = BackendOf(Device::CPU());
  EXPECT_TRUE(cpu.ComputesNatively(DType::kF32));
  EXPECT_FALSE(cpu.ComputesNatively(DType::kF16));
  const char* isa = std::getenv("DNNL_MAX_CPU_ISA");
  if (isa != nullptr && std::string(isa) == "AVX2") {
    EXPECT_FALSE(cpu.ComputesNatively(DType::kBF16));
    EXPECT_EQ(cpu::LoopIsa(), cpu::VectorIsa::kAvx2);  // the own loops follow oneDNN's cap
  }
}

// Each thread's part of the range: every index once, whatever the count.
TEST(LowPrecisionTest, VectorLoopVisitsEveryIndexOnce) {
  for (int64_t n : {0, 1, 3, 17, 1000}) {
    std::vector<int> visits(n, 0);
    cpu::ParallelFor(n, [&](int64_t i) { ++visits[i]; });
    EXPECT_EQ(std::count(visits.begin(), visits.end(), 1), n) << n;
  }
}

// The AMP pass casts convolution weights every step: the parameter and its bf16 copy both take
// the weight layout the convolution reads, so nothing is reordered but the result.
TEST(LowPrecisionTest, CastWeightsKeepTheConvolutionsLayout) {
  auto graph = std::make_unique<Graph>();
  Builder b(graph.get());
  auto bf16 = [&](Value* v) { return b.Op1("Cast", {v}, {{"dtype", std::string("bf16")}}); };
  Value* x = b.Op1("Relu", {bf16(b.Input("x", {2, 16, 6, 6}))});
  Value* y = b.Op1("Conv2D", {x, bf16(b.Parameter("w", {16, 16, 3, 3}))});
  graph->AddOutput("y", b.Op1("Cast", {y}, {{"dtype", std::string("f32")}}), OutputKind::kResult);
  ASSERT_TRUE(b.status().ok()) << b.status();
  auto executor = Compile(std::move(graph), {});
  ASSERT_TRUE(executor.ok()) << executor.status();
  int reorders = 0;
  for (const auto& node : (*executor)->graph().nodes()) {
    if (node->op->name() == "Reorder") ++reorders;
    if (node->op->name() != "Conv2D") continue;
    EXPECT_EQ(node->inputs[1]->layout, NativeWeightLayout());
    EXPECT_EQ(node->inputs[1]->producer->inputs[0]->layout, NativeWeightLayout());
  }
  EXPECT_EQ(reorders, 2);  // x into the blocked layout, the result out of it
}

// oneDNN's bf16 kernels where the CPU computes bf16, the float32 fallback (a kernel of no op)
// elsewhere and for f16; the element-wise loops in every dtype.
TEST(LowPrecisionTest, KernelsFallBackWhereTheCpuLacksTheDtype) {
  const bool bf16 = BackendOf(Device::CPU()).ComputesNatively(DType::kBF16);
  for (DType dtype : {DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(Name(dtype));
    Graph graph;
    Builder b(&graph);
    Value* x = b.Input("x", {2, 16, 4, 4}, dtype);
    Value* conv = b.Op1("Conv2D", {x, b.Input("w", {16, 16, 3, 3}, dtype)});
    Value* relu = b.Op1("Relu", {conv});
    ASSERT_TRUE(b.status().ok()) << b.status();
    absl::StatusOr<const KernelDef*> conv_kernel =
        KernelRegistry::Global().Find(*conv->producer, DeviceType::kCPU);
    absl::StatusOr<const KernelDef*> relu_kernel =
        KernelRegistry::Global().Find(*relu->producer, DeviceType::kCPU);
    ASSERT_TRUE(conv_kernel.ok() && relu_kernel.ok());
    EXPECT_EQ((*conv_kernel)->op, dtype == DType::kBF16 && bf16 ? "Conv2D" : "");
    EXPECT_EQ((*relu_kernel)->op, "Relu");
  }
}

// Batch norm in bf16 and f16 has kernels of its own in every case (oneDNN's where the CPU computes
// bf16, the own loops elsewhere), never the fallback's float32 copies.
TEST(LowPrecisionTest, BatchNormNeverFallsBack) {
  for (DType dtype : {DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(Name(dtype));
    Graph graph;
    Builder b(&graph);
    Value* x = b.Input("x", {2, 16, 4, 4}, dtype);
    Value* c = b.Input("c", {16});
    std::vector<Value*> norm = b.Op("BatchNormRelu", {x, c, c, c, c});
    ASSERT_EQ(norm.size(), 6u) << b.status();
    std::vector<Value*> grad = b.Op("BatchNormReluGrad", {x, c, norm[1], norm[2], x, norm[5]});
    ASSERT_EQ(grad.size(), 3u) << b.status();
    for (const Node* node : {norm[0]->producer, grad[0]->producer}) {
      absl::StatusOr<const KernelDef*> kernel =
          KernelRegistry::Global().Find(*node, DeviceType::kCPU);
      ASSERT_TRUE(kernel.ok()) << kernel.status();
      EXPECT_EQ((*kernel)->op, node->op->name());
    }
  }
}

}  // namespace
}  // namespace lockstep
