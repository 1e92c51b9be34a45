// LeNet-5 trained on the tests' own backend (test_backend.h: its own device id, allocator,
// blocked layout and loop kernels) against the CPU backend (oneDNN), through the ordinary front
// end: train::Model with ModelOptions::device, nothing else.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "tests/backend/test_backend.h"
#include "tests/train/shapes_data.h"
#include "train/model.h"
#include "train/models.h"

namespace lockstep::test_backend {
namespace {

using train::Model;

constexpr int64_t kBatch = 8;
constexpr int64_t kSize = 32;  // LeNet-5's input: two 5x5 convolutions and 2x2 poolings to 5x5
constexpr int kSteps = 5;

// Both backends compute in float32 but sum in other orders (oneDNN's blocked kernels; the loops
// here in double), so results differ by a few roundings (2^-24 relative each), compounded over
// the steps. Measured on AVX-512, and with oneDNN capped at AVX2 and at SSE4.1: the losses equal
// to the bit, parameters and moments (|values| < 0.35) within 3e-8. The bounds, 1e-6 plus 1e-5
// of the value, leave a margin of over 30 for other CPUs and libraries, while a reorder that
// does not reorder moves the first loss by 6e-3 and the parameters by 5e-3.
constexpr double kRelative = 1e-5;
constexpr double kAbsolute = 1e-6;

Model LeNetOn(Device device) {
  return Model(
      train::models::LeNet5(train::testing::kShapeClasses, 1), train::SoftmaxCrossEntropy(),
      train::Momentum{.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-4},
      {.batch_size = kBatch, .image_shape = {1, kSize, kSize}, .seed = 11, .device = device});
}

// Batch `step` of the generated shapes, as views of their host memory.
train::Batch BatchOf(const train::testing::ShapeImages& data, int step) {
  const Shape images = {kBatch, 1, kSize, kSize};
  return {data.images.View(step * NumElements(images) * sizeof(float), images, DType::kF32),
          data.labels.View(step * kBatch * sizeof(int32_t), {kBatch}, DType::kI32)};
}

// The largest |got - want| beyond kAbsolute + kRelative |want|, element by element; 0 when
// every element is within tolerance.
double Excess(const Tensor& got, const Tensor& want) {
  double excess = 0.0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double a = got.data<float>()[i], b = want.data<float>()[i];
    excess = std::max(excess, std::abs(a - b) - (kAbsolute + kRelative * std::abs(b)));
  }
  return excess;
}

TEST(TestBackendTest, ReorderRoundTripsThroughTheBlockedLayout) {
  const Shape shape = {2, 8, 3, 5};  // (N, C, H, W)
  Tensor plain = Tensor::Empty(shape, DType::kF32);
  for (int64_t i = 0; i < plain.numel(); ++i) plain.data<float>()[i] = static_cast<float>(i);
  Tensor blocked = Tensor::Empty(shape, DType::kF32, TestDevice());
  Tensor back = Tensor::Zeros(shape, DType::kF32);
  ASSERT_TRUE(
      BackendOf(TestDevice()).Reorder(plain, Layout::kPlain, blocked, BlockedLayout()).ok());
  // (n 1, c 6, h 2, w 3) lies in block 1 of sample 1, at channel 2 of the block.
  EXPECT_EQ(blocked.data<float>()[(((1 * 2 + 1) * 3 + 2) * 5 + 3) * 4 + 2],
            plain.data<float>()[((1 * 8 + 6) * 3 + 2) * 5 + 3]);
  ASSERT_TRUE(BackendOf(TestDevice()).Reorder(blocked, BlockedLayout(), back, Layout::kPlain).ok());
  EXPECT_EQ(std::memcmp(back.raw_data(), plain.raw_data(), plain.nbytes()), 0);
}

TEST(TestBackendTest, LeNetTrainsAsOnTheCpu) {
  const MemoryCounts before = Memory();
  const auto data = train::testing::MakeShapeImages(kBatch * kSteps, 1, kSize, /*seed=*/5);
  {
    Model cpu = LeNetOn(Device::CPU());
    Model test = LeNetOn(TestDevice());
    ASSERT_TRUE(cpu.Compile().ok());
    absl::Status compiled = test.Compile();
    ASSERT_TRUE(compiled.ok()) << compiled;
    for (const auto& spec : cpu.parameters()) {  // the same start
      const Tensor want = *cpu.Variable(spec.name), got = *test.Variable(spec.name);
      ASSERT_EQ(std::memcmp(got.raw_data(), want.raw_data(), want.nbytes()), 0) << spec.name;
    }
    for (int step = 0; step < kSteps; ++step) {
      absl::StatusOr<double> want = cpu.TrainStep(BatchOf(data, step));
      absl::StatusOr<double> got = test.TrainStep(BatchOf(data, step));
      ASSERT_TRUE(want.ok()) << want.status();
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_NEAR(*got, *want, kAbsolute + kRelative * std::abs(*want)) << "step " << step;
    }
    for (const auto& spec : cpu.parameters()) {
      for (const std::string& name : {spec.name, train::MomentName(spec.name)}) {
        absl::StatusOr<Tensor> want = cpu.Variable(name), got = test.Variable(name);
        ASSERT_TRUE(want.ok() && got.ok()) << name << ": " << want.status() << got.status();
        EXPECT_EQ(Excess(*got, *want), 0.0) << name;
      }
    }

    // The graph ran on the backend's terms: its alignment, its memory, its blocked layout with
    // reorders both ways.
    const Graph& graph = test.train_executor()->graph();
    EXPECT_EQ(graph.plan().alignment, kTestAlignment);
    EXPECT_GT(Memory().allocations, before.allocations);
    int blocked_values = 0, into_blocked = 0, into_plain = 0;
    for (const auto& node : graph.nodes()) {
      for (const auto& output : node->outputs) blocked_values += output->layout == BlockedLayout();
      if (node->op->name() != "Reorder") continue;
      (node->output()->layout == BlockedLayout() ? into_blocked : into_plain) += 1;
    }
    EXPECT_GT(blocked_values, 0);
    EXPECT_GT(into_blocked, 0);
    EXPECT_GT(into_plain, 0);
  }
  EXPECT_EQ(Memory().live, before.live) << "the models' memory went back to the backend";
}

}  // namespace
}  // namespace lockstep::test_backend
