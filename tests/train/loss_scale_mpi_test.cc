// Dynamic loss scaling across ranks (mpirun -n 2 and -n 4): an Inf pixel in the last rank's
// batch of one step makes that rank's gradients non-finite. After the AllReduce every rank sees
// it, skips the same update and halves the scale, and training goes on to the parameters and
// moments of a run that never took that step, bit for bit: the scale is a power of two, which
// the update divides out exactly. At O2 in fp16 a pixel of 1e6, finite in float32, overflows
// fp16's range (65504) in the network's first cast and does the same.

#include <gtest/gtest.h>

#include <limits>

#include "tests/parallel/mpi_test_main.h"
#include "tests/train/resume_util.h"
#include "tests/train/shapes_data.h"
#include "train/dataset_source.h"

namespace lockstep::train {
namespace {

constexpr int64_t kSteps = 8;
constexpr int64_t kBadStep = 3;  // 1-based

// How a run computes and the pixel that overflows it on one rank.
struct Precision {
  AmpLevel amp_level = AmpLevel::kO0;
  DType amp_dtype = DType::kBF16;
  double initial_scale = 65536.0;
  float bad_pixel = std::numeric_limits<float>::infinity();
};

// Without batch norm, whose running statistics an Inf batch would spoil on its rank alone.
Model DataParallelModel(const Precision& precision) {
  ModelOptions options{
      .batch_size = 4,
      .image_shape = {3, 16, 16},
      .seed = 3,
      .parallel = {.mode = parallel::ParallelMode::kDataParallel},
      .dynamic_loss_scale = DynamicLossScale{.initial = precision.initial_scale, .window = 100},
      .context = TestContext()};
  options.amp_level = precision.amp_level;
  options.amp_dtype = precision.amp_dtype;
  return Model(testing::TinyNet(testing::kShapeClasses, /*batch_norm=*/false),
               SoftmaxCrossEntropy(), Momentum{.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-4},
               std::move(options));
}

// This rank's kSteps batches of 4, in order.
std::unique_ptr<DataSource> RankData(int rank) {
  testing::ShapeImages shapes = testing::MakeShapeImages(kSteps * 4, 3, 16, 30 + rank);
  auto source = InMemoryDataSource::Create(shapes.images, shapes.labels, {.batch_size = 4});
  EXPECT_TRUE(source.ok()) << source.status();
  return std::move(*source);
}

// Parameters and moments, without the loss scale's own state.
std::map<std::string, std::string> TrainedBytes(const Model& model) {
  std::map<std::string, std::string> bytes = testing::VariableBytes(model);
  bytes.erase(kLossScaleState);
  bytes.erase(kLossScaleGoodStepsState);
  return bytes;
}

void ExpectOverflowOnOneRankSkipsTheSameStepOnEvery(const Precision& precision) {
  const parallel::Context& ctx = TestContext();
  const bool faulty_rank = ctx.rank() == ctx.size() - 1;
  const double scale = precision.initial_scale;
  Model faulty = DataParallelModel(precision);
  std::unique_ptr<DataSource> data = RankData(ctx.rank());
  Batch batch;
  for (int64_t step = 1; step <= kSteps; ++step) {
    ASSERT_TRUE(*data->Next(&batch));
    if (step == kBadStep && faulty_rank) {
      batch.images.data<float>()[123] = precision.bad_pixel;
    }
    ASSERT_TRUE(faulty.TrainStep(batch).ok());
    EXPECT_EQ(faulty.last_update_skipped(), step == kBadStep)
        << "rank " << ctx.rank() << " step " << step;
    EXPECT_EQ(*faulty.LossScale(), step < kBadStep ? scale : scale / 2)
        << "rank " << ctx.rank() << " step " << step;
  }

  Model reference = DataParallelModel(precision);
  data = RankData(ctx.rank());
  for (int64_t step = 1; step <= kSteps; ++step) {
    ASSERT_TRUE(*data->Next(&batch));
    if (step == kBadStep) continue;
    ASSERT_TRUE(reference.TrainStep(batch).ok());
    EXPECT_FALSE(reference.last_update_skipped());
  }
  const std::map<std::string, std::string> expected = TrainedBytes(reference);
  const std::map<std::string, std::string> actual = TrainedBytes(faulty);
  ASSERT_EQ(actual.size(), expected.size());
  for (const auto& [name, bytes] : expected) {
    EXPECT_TRUE(actual.at(name) == bytes) << name << " on rank " << ctx.rank();
  }
}

TEST(LossScaleMpiTest, OverflowOnOneRankSkipsTheSameStepOnEvery) {
  ExpectOverflowOnOneRankSkipsTheSameStepOnEvery({});
}

TEST(LossScaleMpiTest, Fp16OverflowOnOneRankSkipsTheSameStepOnEvery) {
  ExpectOverflowOnOneRankSkipsTheSameStepOnEvery({.amp_level = AmpLevel::kO2,
                                                  .amp_dtype = DType::kF16,
                                                  .initial_scale = 1024.0,
                                                  .bad_pixel = 1e6f});
}

}  // namespace
}  // namespace lockstep::train
