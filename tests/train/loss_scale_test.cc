// Dynamic loss scaling in one process: a scale so large that the gradients overflow is divided
// until they do not, the overflowing steps leave every parameter and moment as it was, and a
// window of finite steps grows the scale again. Without batch norm, which would undo the large
// inputs that make the gradients overflow. A learning rate of 0 keeps the gradients the same
// from step to step, so the scale that fits them stays the same.

#include <gtest/gtest.h>

#include <cmath>

#include "tests/train/resume_util.h"
#include "tests/train/shapes_data.h"
#include "train/dataset_source.h"

namespace lockstep::train {
namespace {

using testing::VariableBytes;

// The model's parameters and moments, without the loss scale's own state.
std::map<std::string, std::string> TrainedBytes(const Model& model) {
  std::map<std::string, std::string> bytes = VariableBytes(model);
  bytes.erase(kLossScaleState);
  bytes.erase(kLossScaleGoodStepsState);
  return bytes;
}

TEST(DynamicLossScaleTest, OverflowingScaleIsDividedAndItsStepsSkipped) {
  constexpr int64_t kWindow = 3;
  Model model(testing::TinyNet(testing::kShapeClasses, /*batch_norm=*/false),
              SoftmaxCrossEntropy(), Momentum{.lr = 0.0},
              {.batch_size = 4,
               .image_shape = {3, 16, 16},
               .seed = 1,
               .dynamic_loss_scale =
                   DynamicLossScale{.initial = std::ldexp(1.0, 127), .window = kWindow}});
  ASSERT_TRUE(model.Compile().ok());
  testing::ShapeImages shapes = testing::MakeShapeImages(4, 3, 16, 11);
  float* pixels = shapes.images.data<float>();
  for (int64_t i = 0; i < shapes.images.numel(); ++i) pixels[i] *= 1000.0f;
  const Batch batch{shapes.images, shapes.labels};
  double scale = std::ldexp(1.0, 127);
  int64_t skipped = 0;
  while (true) {
    const std::map<std::string, std::string> before = TrainedBytes(model);
    ASSERT_TRUE(model.TrainStep(batch).ok());
    if (!model.last_update_skipped()) break;
    ++skipped;
    ASSERT_LT(skipped, 100) << "the scale never came down";
    EXPECT_TRUE(TrainedBytes(model) == before) << "skipped step " << skipped << " changed them";
    scale /= 2;
    EXPECT_EQ(*model.LossScale(), scale);
  }
  EXPECT_GT(skipped, 0) << "2^127 should overflow the gradients";
  // The step that went through, then kWindow - 1 more finite ones: the scale doubles.
  for (int64_t step = 1; step < kWindow; ++step) {
    EXPECT_EQ(*model.LossScale(), scale);
    ASSERT_TRUE(model.TrainStep(batch).ok());
    EXPECT_FALSE(model.last_update_skipped());
  }
  EXPECT_EQ(*model.LossScale(), 2 * scale);
}

}  // namespace
}  // namespace lockstep::train
