#include "tests/testing/grad_check.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/rng.h"
#include "graph/compile.h"

namespace lockstep::testing {
namespace {

struct Compiled {
  std::unique_ptr<Executor> executor;
  std::vector<std::string> outputs;  // names of the float outputs
  std::vector<std::string> seeds;    // the data input holding each output's incoming gradient
  std::vector<std::string> results;  // names of the f32 and i32 outputs, in order
};

std::string OutputName(size_t k) { return absl::StrCat("out/", k); }
std::string SeedName(size_t k) { return absl::StrCat("dy/", k); }

// Builds the subgraph with every float output as a graph output; with `differentiate`, adds
// a seed input per output and the backward pass for the differentiable inputs.
Compiled Build(const std::vector<GradCheckInput>& inputs, const BuildFn& build, bool differentiate,
               Device device, const PassConfig& config) {
  auto graph = std::make_unique<Graph>();
  Builder b(graph.get());
  std::vector<Value*> values;
  for (const GradCheckInput& input : inputs) {
    switch (input.role) {
      case InputRole::kData:
        values.push_back(b.Input(input.name, input.shape, input.dtype));
        break;
      case InputRole::kParameter:
        values.push_back(b.Parameter(input.name, input.shape, input.dtype));
        break;
      case InputRole::kState:
        values.push_back(b.State(input.name, input.shape, input.dtype));
        break;
    }
  }
  std::vector<Value*> outputs = build(b, values);
  EXPECT_TRUE(b.status().ok()) << b.status();
  Compiled compiled;
  AutodiffOptions autodiff;
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (outputs[k] == nullptr) continue;
    const DType dtype = outputs[k]->dtype();
    if (dtype != DType::kF32 && dtype != DType::kI32) continue;
    graph->AddOutput(OutputName(k), outputs[k], OutputKind::kResult);
    compiled.results.push_back(OutputName(k));
    if (dtype != DType::kF32) continue;
    compiled.outputs.push_back(OutputName(k));
    compiled.seeds.push_back(SeedName(k));
    if (differentiate) {
      b.Input(SeedName(k), outputs[k]->shape());
      autodiff.seeds.emplace_back(OutputName(k), SeedName(k));
    }
  }
  for (const GradCheckInput& input : inputs) {
    if (input.differentiable) autodiff.wrt.push_back(input.name);
  }
  CompileOptions options{.device = device, .config = config};
  if (differentiate) options.autodiff = autodiff;
  absl::StatusOr<std::unique_ptr<Executor>> executor = Compile(std::move(graph), options);
  EXPECT_TRUE(executor.ok()) << executor.status();
  if (executor.ok()) compiled.executor = std::move(*executor);
  return compiled;
}

// The input's values: given, or normal draws kept at least `kink` away from zero.
std::vector<float> InputValues(const GradCheckInput& input, uint64_t stream, double kink) {
  if (!input.values.empty()) return input.values;
  std::vector<float> values = NormalValues(input.shape, stream);
  for (float& v : values) {
    v *= input.stddev;
    if (std::abs(v) < kink) v = std::copysign(static_cast<float>(kink) + std::abs(v), v);
  }
  return values;
}

void Write(const Tensor& tensor, const std::vector<float>& values) {
  ASSERT_EQ(static_cast<int64_t>(values.size()), tensor.numel());
  if (tensor.dtype() == DType::kI32) {
    std::transform(values.begin(), values.end(), tensor.data<int32_t>(),
                   [](float v) { return static_cast<int32_t>(v); });
  } else {
    std::copy(values.begin(), values.end(), tensor.data<float>());
  }
}

// Through WriteInput: parameters may be kept blocked.
void FeedInputs(const Executor& executor, const std::vector<GradCheckInput>& inputs,
                const std::vector<std::vector<float>>& values) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    Tensor plain = Tensor::Empty(inputs[i].shape, inputs[i].dtype);
    Write(plain, values[i]);
    ASSERT_TRUE(executor.WriteInput(inputs[i].name, plain).ok()) << inputs[i].name;
  }
}

// S = sum_k <dy_k, y_k> in float64.
double Objective(const Compiled& forward, const std::vector<std::vector<float>>& seeds) {
  EXPECT_TRUE(forward.executor->Run().ok());
  double total = 0.0;
  for (size_t k = 0; k < forward.outputs.size(); ++k) {
    Tensor y = *forward.executor->ReadOutput(forward.outputs[k]);
    for (int64_t i = 0; i < y.numel(); ++i)
      total += static_cast<double>(seeds[k][i]) * y.data<float>()[i];
  }
  return total;
}

}  // namespace

std::vector<float> NormalValues(const Shape& shape, uint64_t seed) {
  std::vector<float> values(NumElements(shape));
  Philox(1234, seed).Normal(values.data(), values.size(), 0.0f, 1.0f);
  return values;
}

void ExpectGradientsMatch(const std::vector<GradCheckInput>& inputs, const BuildFn& build,
                          const GradCheckOptions& options) {
  Compiled backward = Build(inputs, build, /*differentiate=*/true, options.device, options.config);
  Compiled forward = Build(inputs, build, /*differentiate=*/false, options.device, options.config);
  ASSERT_TRUE(backward.executor && forward.executor);
  std::vector<std::vector<float>> values, seeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    values.push_back(InputValues(inputs[i], options.seed * 1000 + i, options.kink));
  }
  FeedInputs(*backward.executor, inputs, values);
  FeedInputs(*forward.executor, inputs, values);
  for (size_t k = 0; k < backward.seeds.size(); ++k) {
    Tensor dy = *backward.executor->ReadInput(backward.seeds[k]);
    seeds.push_back(
        InputValues({.name = "dy", .shape = dy.shape()}, options.seed * 1000 + 999 - k, 0));
    Write(dy, seeds.back());
    ASSERT_TRUE(backward.executor->WriteInput(backward.seeds[k], dy).ok());
  }
  ASSERT_TRUE(backward.executor->Run().ok());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].differentiable) continue;
    Tensor analytic = *backward.executor->ReadOutput(GradientName(inputs[i].name));
    Tensor x = *forward.executor->ReadInput(inputs[i].name);
    auto set = [&](int64_t j, float value) {
      x.data<float>()[j] = value;
      EXPECT_TRUE(forward.executor->WriteInput(inputs[i].name, x).ok());
    };
    int failures = 0;
    for (int64_t j = 0; j < x.numel() && failures < 5; ++j) {
      const float original = x.data<float>()[j];
      set(j, original + static_cast<float>(options.step));
      double plus = Objective(forward, seeds);
      set(j, original - static_cast<float>(options.step));
      double minus = Objective(forward, seeds);
      set(j, original);
      double numeric = (plus - minus) / (2.0 * options.step);
      double a = analytic.data<float>()[j];
      double scale = std::max({std::abs(a), std::abs(numeric), 1.0});
      if (std::abs(a - numeric) > options.tolerance * scale) {
        ++failures;
        ADD_FAILURE() << "gradient of " << inputs[i].name << "[" << j << "]: analytic " << a
                      << ", numeric " << numeric;
      }
    }
  }
}

void ExpectOpGradientsMatch(const std::string& op, const std::vector<GradCheckInput>& inputs,
                            const Attrs& attrs, const GradCheckOptions& options) {
  ExpectGradientsMatch(
      inputs,
      [&](Builder& b, const std::vector<Value*>& values) { return b.Op(op, values, attrs); },
      options);
}

std::vector<std::vector<float>> RunForward(const std::vector<GradCheckInput>& inputs,
                                           const BuildFn& build, Device device,
                                           const PassConfig& config) {
  Compiled forward = Build(inputs, build, /*differentiate=*/false, device, config);
  if (!forward.executor) return {};
  std::vector<std::vector<float>> values;
  for (size_t i = 0; i < inputs.size(); ++i) values.push_back(InputValues(inputs[i], 1000 + i, 0));
  FeedInputs(*forward.executor, inputs, values);
  absl::Status ran = forward.executor->Run();
  EXPECT_TRUE(ran.ok()) << ran;
  std::vector<std::vector<float>> outputs;
  for (const std::string& name : forward.results) {
    Tensor y = *forward.executor->ReadOutput(name);
    std::vector<float>& out = outputs.emplace_back(y.numel());
    if (y.dtype() == DType::kI32) {
      std::copy(y.data<int32_t>(), y.data<int32_t>() + y.numel(), out.begin());
    } else {
      std::copy(y.data<float>(), y.data<float>() + y.numel(), out.begin());
    }
  }
  return outputs;
}

}  // namespace lockstep::testing
