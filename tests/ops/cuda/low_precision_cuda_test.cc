// The bf16 and f16 CUDA kernels against the float32 CPU kernels (skipped without a GPU). Both
// sides see the same values: inputs are drawn, rounded to the 16-bit dtype on the host, and given
// to the CPU as float32 and to CUDA through a Cast to the 16-bit dtype (exact). The CUDA graph
// casts its 16-bit outputs back to float32; the CPU computes everything in float32. So the
// difference is the 16-bit kernels' own rounding (of outputs, and of intermediates they store),
// bounded by a few units in the last place of the dtype. Graphs of 16-bit 4-D values also go
// through the NHWC layout and its reorders.

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/half.h"
#include "graph/compile.h"
#include "tests/ops/cuda/batch_norm_relu_pair.h"
#include "tests/testing/backend_compare.h"

namespace lockstep {
namespace {

using testing::BatchNormReluPair;
using testing::GradCheckInput;

// A few units in the last place of the dtype, relative to max(1, max |output|): bf16 keeps 8
// significant bits (unit 2^-7), f16 11 (2^-10).
double Tolerance(DType dtype) { return dtype == DType::kBF16 ? 2e-2 : 3e-3; }

float RoundTo(DType dtype, float value) {
  return dtype == DType::kBF16 ? ToFloat(FloatTo<BFloat16>(value))
                               : ToFloat(FloatTo<Float16>(value));
}

// An input: drawn (or given) values, rounded to the 16-bit dtype when `low`, else float32
// (batch norm's parameters and statistics).
struct LowInput {
  GradCheckInput input;
  bool low = true;
};

// `build` on float32 on the CPU against `build` on `dtype` on CUDA, as the file comment says.
void ExpectLowMatches(DType dtype, const std::vector<LowInput>& low_inputs,
                      const testing::BuildFn& build, double tolerance_scale = 1.0) {
  SCOPED_TRACE(DTypeName(dtype));
  std::vector<GradCheckInput> inputs;
  for (size_t i = 0; i < low_inputs.size(); ++i) {
    GradCheckInput input = low_inputs[i].input;
    if (input.values.empty()) {
      input.values = testing::NormalValues(input.shape, 100 + i);
      for (float& v : input.values) v *= input.stddev;
    }
    if (low_inputs[i].low) {
      for (float& v : input.values) v = RoundTo(dtype, v);
    }
    inputs.push_back(std::move(input));
  }
  const std::string name = DTypeName(dtype);
  const testing::BuildFn low_build = [&](Builder& b, const std::vector<Value*>& in) {
    std::vector<Value*> cast;
    for (size_t i = 0; i < in.size(); ++i) {
      cast.push_back(low_inputs[i].low ? b.Op1("Cast", {in[i]}, {{"dtype", name}}) : in[i]);
    }
    std::vector<Value*> outputs = build(b, cast);
    for (Value*& output : outputs) {
      if (output->dtype() == dtype)
        output = b.Op1("Cast", {output}, {{"dtype", std::string("f32")}});
    }
    return outputs;
  };
  testing::ExpectOutputsMatch(testing::RunForward(inputs, build, Device::CPU()),
                              testing::RunForward(inputs, low_build, Device::CUDA(0)),
                              Tolerance(dtype) * tolerance_scale);
}

testing::BuildFn OneOp(const std::string& op, const Attrs& attrs = {}) {
  return [op, attrs](Builder& b, const std::vector<Value*>& in) { return b.Op(op, in, attrs); };
}

LowInput Low(const std::string& name, const Shape& shape) {
  return {{.name = name, .shape = shape}};
}

constexpr DType kLowDTypes[] = {DType::kBF16, DType::kF16};
const Shape kShape = {4, 8, 5, 3};

TEST(LowPrecisionCudaTest, CastBetweenFloatTypes) {
  LS_SKIP_WITHOUT_GPU();
  for (DType dtype : kLowDTypes) {
    // f32 -> dtype -> the other 16-bit type -> f32: each step rounds to nearest even. 4-D
    // values are cast to 16 bits into NHWC, between 16-bit types in place, and back to plain.
    const std::string other = dtype == DType::kBF16 ? "f16" : "bf16";
    for (const Shape& x : {Shape{1000}, Shape{2, 8, 5, 3}, Shape{3, 3, 7, 7}}) {
      SCOPED_TRACE(ShapeToString(x));
      ExpectLowMatches(dtype, {Low("x", x)}, [&](Builder& b, const std::vector<Value*>& in) {
        Value* y = b.Op1("Cast", {in[0]}, {{"dtype", other}});
        return std::vector<Value*>{b.Op1("Cast", {y}, {{"dtype", std::string("f32")}})};
      });
    }
  }
}

TEST(LowPrecisionCudaTest, ElementWise) {
  LS_SKIP_WITHOUT_GPU();
  for (DType dtype : kLowDTypes) {
    // Packs of four 16-bit values, and 315 elements, three past the last pack.
    for (const Shape& x : {kShape, Shape{3, 7, 5, 3}}) {
      SCOPED_TRACE(ShapeToString(x));
      ExpectLowMatches(dtype, {Low("a", x), Low("b", x)}, OneOp("Add"));
      ExpectLowMatches(dtype, {Low("a", x), Low("b", x)}, OneOp("AddRelu"));
      ExpectLowMatches(dtype, {Low("x", x)}, OneOp("Relu"));
      ExpectLowMatches(dtype, {Low("x", x), Low("dy", x)}, OneOp("ReluGrad"));
      ExpectLowMatches(dtype, {Low("x", x), Low("dy1", x), Low("dy2", x)}, OneOp("AddReluGrad"));
      ExpectLowMatches(dtype, {Low("x", x)}, OneOp("Scale", {{"scale", -0.37}}));
    }
    ExpectLowMatches(dtype, {Low("x", {8, 16, 7, 7}), Low("bias", {16})}, OneOp("BiasAdd"));
    ExpectLowMatches(dtype, {Low("x", {64, 100}), Low("bias", {100})}, OneOp("BiasAdd"));
    ExpectLowMatches(dtype, {Low("dy", {32, 64, 14, 14})}, OneOp("BiasAddGrad"));
  }
}

TEST(LowPrecisionCudaTest, Fill) {
  LS_SKIP_WITHOUT_GPU();
  for (DType dtype : kLowDTypes) {
    const std::string name = DTypeName(dtype);
    const Attrs attrs = {{"shape", Shape{3, 100}}, {"value", 2.5}, {"dtype", name}};
    const std::vector<std::vector<float>> gpu = testing::RunForward(
        {},
        [&](Builder& b, const std::vector<Value*>&) {
          Value* y = b.Op1("Fill", {}, attrs);
          return std::vector<Value*>{b.Op1("Cast", {y}, {{"dtype", std::string("f32")}})};
        },
        Device::CUDA(0));
    ASSERT_EQ(gpu.size(), 1u);
    for (float v : gpu[0]) ASSERT_EQ(v, 2.5f) << name;
  }
}

// All three directions of a convolution: NHWC activations, KRSC weights, tensor cores.
void ExpectConvMatches(DType dtype, const Shape& x, const Shape& w, const Shape& y,
                       const Attrs& attrs) {
  SCOPED_TRACE(ShapeToString(x) + " * " + ShapeToString(w));
  ExpectLowMatches(dtype, {Low("x", x), Low("w", w)}, OneOp("Conv2D", attrs));
  Attrs data = attrs;
  data.Set("input_shape", x);
  ExpectLowMatches(dtype, {Low("dy", y), Low("w", w)}, OneOp("Conv2DBackpropInput", data));
  Attrs filter = attrs;
  filter.Set("filter_shape", w);
  ExpectLowMatches(dtype, {Low("x", x), Low("dy", y)}, OneOp("Conv2DBackpropFilter", filter));
}

Attrs ConvAttrs(int64_t stride, int64_t padding, int64_t groups = 1) {
  return {{"stride", std::vector<int64_t>{stride, stride}},
          {"padding", std::vector<int64_t>{padding, padding}},
          {"dilation", std::vector<int64_t>{1, 1}},
          {"groups", groups}};
}

TEST(LowPrecisionCudaTest, Convolutions) {
  LS_SKIP_WITHOUT_GPU();
  for (DType dtype : kLowDTypes) {
    ExpectConvMatches(dtype, {2, 8, 9, 9}, {16, 8, 3, 3}, {2, 16, 9, 9}, ConvAttrs(1, 1));
    ExpectConvMatches(dtype, {2, 16, 8, 8}, {32, 16, 1, 1}, {2, 32, 4, 4}, ConvAttrs(2, 0));
    ExpectConvMatches(dtype, {2, 3, 32, 32}, {16, 3, 7, 7}, {2, 16, 16, 16}, ConvAttrs(2, 3));
    // ResNet's stem and a 4-channel image: forward through cuDNN's graph API (cudnn_graph.h).
    ExpectConvMatches(dtype, {2, 3, 32, 32}, {64, 3, 7, 7}, {2, 64, 16, 16}, ConvAttrs(2, 3));
    ExpectConvMatches(dtype, {2, 4, 16, 16}, {8, 4, 3, 3}, {2, 8, 16, 16}, ConvAttrs(1, 1));
    ExpectConvMatches(dtype, {2, 8, 7, 7}, {8, 2, 3, 3}, {2, 8, 7, 7}, ConvAttrs(1, 1, 4));
  }
}

// A 16-bit host tensor of `values` (rounded to nearest even).
template <typename T>
Tensor HostTensor(const Shape& shape, DType dtype, const std::vector<float>& values) {
  Tensor tensor = Tensor::Empty(shape, dtype);
  for (size_t i = 0; i < values.size(); ++i) tensor.data<T>()[i] = FloatTo<T>(values[i]);
  return tensor;
}

// 16-bit weights stored as a parameter (O3) are kept in KRSC: written and read back through the
// backend's host reorder bit for bit, and convolved as the float32 CPU kernel does.
template <typename T>
void ExpectStoredWeightsWork(DType dtype) {
  SCOPED_TRACE(DTypeName(dtype));
  const Shape x_shape = {2, 8, 9, 9}, w_shape = {16, 8, 3, 3};
  std::vector<float> x = testing::NormalValues(x_shape, 7), w = testing::NormalValues(w_shape, 8);
  for (float& v : x) v = RoundTo(dtype, v);
  for (float& v : w) v = RoundTo(dtype, v);
  auto graph = std::make_unique<Graph>();
  Builder b(graph.get());
  Value* y = b.Op1("Conv2D", {b.Input("x", x_shape, dtype), b.Parameter("w", w_shape, dtype)},
                   ConvAttrs(1, 1));
  graph->AddOutput("y", b.Op1("Cast", {y}, {{"dtype", std::string("f32")}}), OutputKind::kResult);
  ASSERT_TRUE(b.status().ok()) << b.status();
  absl::StatusOr<std::unique_ptr<Executor>> executor =
      Compile(std::move(graph), {.device = Device::CUDA(0)});
  ASSERT_TRUE(executor.ok()) << executor.status();
  const Tensor w_plain = HostTensor<T>(w_shape, dtype, w);
  ASSERT_TRUE((*executor)->WriteInput("w", w_plain).ok());
  ASSERT_TRUE((*executor)->WriteInput("x", HostTensor<T>(x_shape, dtype, x)).ok());
  absl::StatusOr<Tensor> w_back = (*executor)->ReadInput("w");
  ASSERT_TRUE(w_back.ok()) << w_back.status();
  for (int64_t i = 0; i < w_plain.numel(); ++i) {
    ASSERT_EQ(w_back->data<T>()[i].bits, w_plain.data<T>()[i].bits) << "w[" << i << "]";
  }
  ASSERT_TRUE((*executor)->Run().ok());
  absl::StatusOr<Tensor> gpu = (*executor)->ReadOutput("y");
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  const std::vector<std::vector<float>> cpu = testing::RunForward(
      {{.name = "x", .shape = x_shape, .values = x}, {.name = "w", .shape = w_shape, .values = w}},
      OneOp("Conv2D", ConvAttrs(1, 1)));
  ASSERT_EQ(cpu.size(), 1u);
  testing::ExpectOutputsMatch(
      cpu, {std::vector<float>(gpu->data<float>(), gpu->data<float>() + gpu->numel())},
      Tolerance(dtype));
}

TEST(LowPrecisionCudaTest, StoredWeightsKeptInKrsc) {
  LS_SKIP_WITHOUT_GPU();
  ExpectStoredWeightsWork<BFloat16>(DType::kBF16);
  ExpectStoredWeightsWork<Float16>(DType::kF16);
}

// Reshape and Flatten of a convolution's NHWC output read it in (N, C, H, W) order: the layout
// pass reorders it to plain first; Identity keeps the layout.
TEST(LowPrecisionCudaTest, ShapeOpsAfterNhwcValues) {
  LS_SKIP_WITHOUT_GPU();
  for (DType dtype : kLowDTypes) {
    ExpectLowMatches(dtype, {Low("x", {2, 8, 5, 5}), Low("w", {4, 8, 3, 3})},
                     [](Builder& b, const std::vector<Value*>& in) {
                       Value* y = b.Op1("Identity", {b.Op1("Conv2D", in, ConvAttrs(1, 1))});
                       return std::vector<Value*>{
                           b.Op1("Flatten", {y}),
                           b.Op1("Reshape", {y}, {{"shape", Shape{-1, 25}}})};
                     });
  }
}

// A (C) float32 vector: positive around `shift` (variances) or of any sign (shift 0).
LowInput Channels(const std::string& name, int64_t c, float shift, uint64_t seed, bool low) {
  std::vector<float> values = testing::NormalValues({c}, seed);
  for (float& v : values) v = shift + (shift > 0 ? 0.3f * std::abs(v) : v);
  return {{.name = name, .shape = {c}, .values = values}, low};
}

LowInput RunningStat(const std::string& name, int64_t c, float shift, uint64_t seed) {
  LowInput input = Channels(name, c, shift, seed, false);
  input.input.differentiable = false;
  input.input.role = InputRole::kState;
  return input;
}

// x (N, C, H, W) 16-bit; gamma and beta float32 (O2) or 16-bit (O3); statistics float32.
std::vector<LowInput> NormInputs(const Shape& x, bool low_params) {
  const int64_t c = x[1];
  return {{{.name = "x", .shape = x, .stddev = 2.0f}},
          Channels("gamma", c, 0.0f, 1, low_params),
          Channels("beta", c, 0.0f, 2, low_params),
          RunningStat("mean", c, 0.0f, 3),
          RunningStat("var", c, 1.0f, 4)};
}

std::vector<LowInput> NormGradInputs(const Shape& x, bool low_params) {
  const int64_t c = x[1];
  return {{{.name = "x", .shape = x, .stddev = 2.0f}},
          Channels("gamma", c, 0.0f, 1, low_params),
          Channels("saved_mean", c, 0.0f, 3, false),
          Channels("saved_var", c, 1.0f, 4, false),
          Low("dy", x)};
}

TEST(LowPrecisionCudaTest, BatchNormWithFloatOrLowParameters) {
  LS_SKIP_WITHOUT_GPU();
  // Channels-last kernels take pairs of channels (a tile is 32 pairs) where the count is even:
  // one tile and two chunks of rows; one partial tile and several chunks; three tiles, the last
  // one pair; (N, C) data; an odd count, one channel a thread.
  for (const Shape& x : {Shape{4, 8, 6, 6}, Shape{8, 40, 7, 9}, Shape{2, 130, 3, 5}, Shape{96, 40},
                         Shape{6, 7, 5, 3}}) {
    SCOPED_TRACE(ShapeToString(x));
    for (DType dtype : kLowDTypes) {
      for (bool low_params : {false, true}) {
        SCOPED_TRACE(low_params ? "O3: 16-bit gamma, beta" : "O2: float32 gamma, beta");
        ExpectLowMatches(dtype, NormInputs(x, low_params), OneOp("BatchNorm", {{"momentum", 0.9}}));
        ExpectLowMatches(dtype, NormInputs(x, low_params), OneOp("BatchNormInference"));
        // dgamma and dbeta sum N * H * W products of 16-bit values.
        ExpectLowMatches(dtype, NormGradInputs(x, low_params), OneOp("BatchNormGrad"), 2.0);
      }
    }
  }
}

TEST(LowPrecisionCudaTest, BatchNormReluPair) {
  LS_SKIP_WITHOUT_GPU();
  // The ReLU's mask bytes in pairs of channels, and one at a time.
  for (const Shape& x : {Shape{4, 8, 5, 5}, Shape{4, 7, 5, 5}}) {
    SCOPED_TRACE(ShapeToString(x));
    for (DType dtype : kLowDTypes) {
      std::vector<LowInput> inputs = NormInputs(x, false);
      inputs.push_back(Low("dy", x));
      ExpectLowMatches(dtype, inputs, BatchNormReluPair, 2.0);
    }
  }
}

Attrs Window(int64_t kernel, int64_t stride, int64_t padding) {
  return {{"kernel", std::vector<int64_t>{kernel, kernel}},
          {"stride", std::vector<int64_t>{stride, stride}},
          {"padding", std::vector<int64_t>{padding, padding}}};
}

TEST(LowPrecisionCudaTest, Pooling) {
  LS_SKIP_WITHOUT_GPU();
  const Attrs window = Window(3, 2, 1);
  Attrs with_argmax = window;
  // Windowed pooling takes one channel a thread (4 channels), or packs of 8 channels of a pixel
  // (16 and 24); the last shape's values tie in every window, whose gradient the first maximum
  // takes.
  std::vector<float> ties(2 * 24 * 9 * 9);
  for (size_t i = 0; i < ties.size(); ++i) ties[i] = static_cast<float>(i % 3);
  for (const GradCheckInput& x :
       {GradCheckInput{.name = "x", .shape = {2, 4, 9, 9}},
        GradCheckInput{.name = "x", .shape = {2, 16, 9, 9}},
        GradCheckInput{.name = "x", .shape = {2, 24, 9, 9}, .values = ties}}) {
    SCOPED_TRACE(ShapeToString(x.shape));
    const Shape y = {x.shape[0], x.shape[1], 5, 5};
    with_argmax.Set("input_shape", x.shape);
    for (DType dtype : kLowDTypes) {
      ExpectLowMatches(dtype, {{x}}, OneOp("MaxPool", window));
      ExpectLowMatches(dtype, {{x}}, [&](Builder& b, const std::vector<Value*>& in) {
        Value* pooled = b.Op1("MaxPool", in, window);
        return std::vector<Value*>{b.Op1("MaxPoolGrad", {in[0], pooled}, window)};
      });
      ExpectLowMatches(dtype, {{x}}, [&](Builder& b, const std::vector<Value*>& in) {
        std::vector<Value*> pooled = b.Op("MaxPoolWithArgmax", in, window);
        if (pooled.size() != 2) return pooled;
        return std::vector<Value*>{
            pooled[0], b.Op1("MaxPoolGradWithArgmax", {pooled[0], pooled[1]}, with_argmax)};
      });
      ExpectLowMatches(dtype, {{x}}, OneOp("AvgPool", window));
      ExpectLowMatches(dtype, {Low("dy", y)}, OneOp("AvgPoolGrad", with_argmax));
    }
  }
  for (DType dtype : kLowDTypes) {
    ExpectLowMatches(dtype, {Low("x", {3, 16, 7, 7})}, OneOp("GlobalAvgPool"));
    ExpectLowMatches(dtype, {Low("dy", {3, 16, 1, 1})},
                     OneOp("GlobalAvgPoolGrad", {{"input_shape", Shape{3, 16, 7, 7}}}));
  }
}

TEST(LowPrecisionCudaTest, MatMulEveryTranspose) {
  LS_SKIP_WITHOUT_GPU();
  const int64_t m = 33, k = 47, n = 29;
  for (DType dtype : kLowDTypes) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        ExpectLowMatches(
            dtype,
            {Low("a", ta ? Shape{k, m} : Shape{m, k}), Low("b", tb ? Shape{n, k} : Shape{k, n})},
            OneOp("MatMul", {{"transpose_a", ta}, {"transpose_b", tb}}));
      }
    }
  }
}

}  // namespace
}  // namespace lockstep
