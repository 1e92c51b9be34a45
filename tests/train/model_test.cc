// Model's API around the training loop: callbacks, batch checks, evaluation over uneven batches,
// in-place updates of the flat buffers, initialisation, and the in-memory data source.

#include "train/model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <regex>
#include <set>
#include <sstream>

#include "absl/strings/str_format.h"
#include "tests/train/shapes_data.h"
#include "train/models.h"
#include "train/progress_bar.h"

namespace lockstep::train {
namespace {

constexpr int64_t kSize = 16;

Model SmallLeNet(int64_t batch = 4, uint64_t seed = 0) {
  return Model(models::LeNet5(testing::kShapeClasses, 1), SoftmaxCrossEntropy(),
               Momentum{.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-4},
               {.batch_size = batch, .image_shape = {1, kSize, kSize}, .seed = seed});
}

std::unique_ptr<InMemoryDataSource> Shapes(int64_t count, InMemoryOptions options) {
  testing::ShapeImages data = testing::MakeShapeImages(count, 1, kSize, 9);
  auto source = InMemoryDataSource::Create(data.images, data.labels, options);
  EXPECT_TRUE(source.ok()) << source.status();
  return source.ok() ? std::move(*source) : nullptr;
}

TEST(ModelTest, CallbacksPrintLossAndEpochTimes) {
  Model model = SmallLeNet();
  auto data = Shapes(16, {.batch_size = 4, .drop_remainder = true});
  std::ostringstream losses, times;
  auto time_monitor = std::make_shared<TimeMonitor>(&times);
  ASSERT_TRUE(
      model.Train(2, *data, {std::make_shared<LossMonitor>(2, &losses), time_monitor}).ok());
  const std::regex line(
      "epoch: [12] step: [24], loss is [0-9]+\\.[0-9]{4}, [0-9]+\\.[0-9] images/s");
  std::istringstream lines(losses.str());
  int count = 0;
  for (std::string text; std::getline(lines, text); ++count) {
    EXPECT_TRUE(std::regex_match(text, line)) << text;
  }
  EXPECT_EQ(count, 4);
  EXPECT_NE(losses.str().find("epoch: 2 step: 4, loss is"), std::string::npos) << losses.str();
  ASSERT_EQ(time_monitor->epochs().size(), 2u);
  EXPECT_EQ(time_monitor->epochs()[1].epoch, 2);
  EXPECT_EQ(time_monitor->epochs()[1].steps, 4);
  EXPECT_EQ(time_monitor->epochs()[1].images, 16);
  EXPECT_NE(times.str().find("per step time:"), std::string::npos);
  EXPECT_EQ(model.global_step(), 8);
  EXPECT_EQ(model.epochs_done(), 2);
}

TEST(ModelTest, TrainingUpdatesTheFlatBuffersInPlace) {
  Model model = SmallLeNet();
  ASSERT_TRUE(model.Compile().ok());
  // Views of the flat parameter and state buffers (a dense layer's weights are plain).
  Tensor weight = *model.train_executor()->Input("fc3.weight");
  Tensor moment = *model.train_executor()->Input("moments.fc3.weight");
  EXPECT_EQ(weight.shape(), (Shape{testing::kShapeClasses, 84}));
  auto inside = [](const Tensor& view, const Tensor& buffer) {
    const char* begin = static_cast<const char*>(buffer.raw_data());
    const char* at = static_cast<const char*>(view.raw_data());
    return at >= begin && at + view.nbytes() <= begin + buffer.nbytes();
  };
  EXPECT_TRUE(inside(weight, model.train_executor()->parameters()));
  EXPECT_TRUE(inside(moment, model.train_executor()->state()));
  const float before = weight.data<float>()[0];
  EXPECT_EQ(moment.data<float>()[0], 0.0f);
  auto data = Shapes(8, {.batch_size = 4});
  ASSERT_TRUE(model.Train(1, *data).ok());
  EXPECT_NE(weight.data<float>()[0], before);
  EXPECT_NE(moment.data<float>()[0], 0.0f);
  EXPECT_EQ(model.Variable("images").status().code(), absl::StatusCode::kNotFound);
}

TEST(ModelTest, EvalCoversUnevenBatchesWithSharedParameters) {
  Model model = SmallLeNet();
  auto train = Shapes(64, {.batch_size = 4, .shuffle = true, .drop_remainder = true});
  ASSERT_TRUE(model.Train(1, *train).ok());
  auto data = Shapes(10, {.batch_size = 4});  // batches of 4, 4 and 2
  absl::StatusOr<EvalResult> result = model.Eval(*data);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->samples, 10);
  // The same numbers from the logits of each batch.
  ASSERT_TRUE(data->Reset(0).ok());
  int64_t correct = 0;
  double loss = 0.0;
  Batch batch;
  while (*data->Next(&batch)) {
    absl::StatusOr<BatchResult> out = model.EvalBatch(batch);
    ASSERT_TRUE(out.ok()) << out.status();
    for (int64_t i = 0; i < batch.images.dim(0); ++i) {
      const float* row = out->logits.data<float>() + i * testing::kShapeClasses;
      const int64_t best = std::max_element(row, row + testing::kShapeClasses) - row;
      correct += best == batch.labels.data<int32_t>()[i];
    }
    loss += out->loss * static_cast<double>(batch.images.dim(0));
  }
  EXPECT_DOUBLE_EQ(result->accuracy, correct / 10.0);
  EXPECT_NEAR(result->loss, loss / 10.0, 1e-9);
}

TEST(ModelTest, TrainingBatchesMustMatchTheCompiledShape) {
  Model model = SmallLeNet();
  auto data = Shapes(6, {.batch_size = 4});  // a last batch of 2
  absl::Status status = model.Train(1, *data);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("epoch 1 step 2: a training batch of 2 images, but the model "
                                  "was compiled for 4"),
            std::string::npos)
      << status;
  Batch wrong{Tensor::Zeros({4, 3, kSize, kSize}, DType::kF32), Tensor::Zeros({4}, DType::kI32)};
  status = model.TrainStep(wrong).status();
  EXPECT_NE(status.message().find("batch images must be f32 (N, 1, 16, 16)"), std::string::npos)
      << status;
}

// A source whose images are NaN: LossMonitor stops training.
class NanSource : public DataSource {
 public:
  absl::Status Reset(int64_t) override { return absl::OkStatus(); }
  absl::StatusOr<bool> Next(Batch* batch) override {
    batch->images = Tensor::Empty({4, 1, kSize, kSize}, DType::kF32);
    float* x = batch->images.data<float>();
    std::fill(x, x + batch->images.numel(), std::numeric_limits<float>::quiet_NaN());
    batch->labels = Tensor::Zeros({4}, DType::kI32);
    return true;
  }
};

TEST(ModelTest, LossMonitorStopsOnAnInvalidLoss) {
  Model model = SmallLeNet();
  NanSource nan;
  std::ostringstream out;
  absl::Status status = model.Train(1, nan, {std::make_shared<LossMonitor>(1, &out)});
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.message().find("epoch: 1 step: 1, loss is "), 0u) << status;
  EXPECT_NE(status.message().find("invalid loss, training stopped"), std::string::npos) << status;
}

// On a terminal: one line per epoch, redrawn in place ('\r', then clear to the line's end),
// ended by a newline once the epoch is done; the last drawing shows the full bar.
TEST(ModelTest, ProgressBarRedrawsOneLinePerEpoch) {
  Model model = SmallLeNet();
  auto data = Shapes(16, {.batch_size = 4, .drop_remainder = true});
  std::ostringstream out;
  ASSERT_TRUE(model.Train(2, *data, {std::make_shared<ProgressBar>(2, 4, 3, &out)}).ok());
  const std::regex done(
      "epoch [12]/2 \\[={24}\\] 4/4 loss [0-9]+\\.[0-9]{4}, [0-9]+\\.[0-9] images/s, ETA "
      "0:00\x1b\\[K");
  std::istringstream lines(out.str());
  int epochs = 0;
  for (std::string line; std::getline(lines, line); ++epochs) {
    ASSERT_EQ(line.front(), '\r') << line;
    const std::string last = line.substr(line.rfind('\r') + 1);
    EXPECT_TRUE(std::regex_match(last, done)) << last;
    EXPECT_EQ(last.find(absl::StrFormat("epoch %d/2", epochs + 1)), 0u) << last;
  }
  EXPECT_EQ(epochs, 2);
  EXPECT_EQ(out.str().back(), '\n');
}

TEST(ModelTest, ProgressBarStopsOnAnInvalidLoss) {
  Model model = SmallLeNet();
  NanSource nan;
  std::ostringstream out;
  absl::Status status = model.Train(1, nan, {std::make_shared<ProgressBar>(1, 4, 1, &out)});
  EXPECT_NE(status.message().find("invalid loss, training stopped"), std::string::npos) << status;
}

TEST(ModelTest, InitialisationIsSeededAndFollowsTorchvision) {
  auto make = [](uint64_t seed) {
    return Model(models::ResNet18(10, {.zero_init_residual = true}), SoftmaxCrossEntropy(),
                 Momentum{}, {.batch_size = 2, .image_shape = {3, 32, 32}, .seed = seed});
  };
  Model a = make(1), b = make(1), c = make(2);
  ASSERT_TRUE(a.Compile().ok() && b.Compile().ok() && c.Compile().ok());
  Tensor wa = *a.Variable("layer3.0.conv2.weight");  // (256, 256, 3, 3)
  Tensor wb = *b.Variable("layer3.0.conv2.weight");
  Tensor wc = *c.Variable("layer3.0.conv2.weight");
  EXPECT_EQ(std::memcmp(wa.raw_data(), wb.raw_data(), wa.nbytes()), 0);
  EXPECT_NE(std::memcmp(wa.raw_data(), wc.raw_data(), wa.nbytes()), 0);
  double sum = 0.0, squares = 0.0;
  for (int64_t i = 0; i < wa.numel(); ++i) {
    sum += wa.data<float>()[i];
    squares += wa.data<float>()[i] * wa.data<float>()[i];
  }
  const double mean = sum / wa.numel();
  const double stddev = std::sqrt(squares / wa.numel() - mean * mean);
  EXPECT_NEAR(stddev, std::sqrt(2.0 / (256 * 9)), 0.01 * std::sqrt(2.0 / (256 * 9)));
  EXPECT_NEAR(mean, 0.0, 0.001);
  auto all_equal = [](const Tensor& t, float value) {
    return std::all_of(t.data<float>(), t.data<float>() + t.numel(),
                       [&](float x) { return x == value; });
  };
  EXPECT_TRUE(all_equal(*a.Variable("layer3.0.bn2.gamma"), 0.0f));  // last BN of the branch
  EXPECT_TRUE(all_equal(*a.Variable("layer3.0.bn1.gamma"), 1.0f));
  EXPECT_TRUE(all_equal(*a.Variable("layer3.0.bn1.beta"), 0.0f));
  EXPECT_TRUE(all_equal(*a.Variable("layer3.0.bn1.moving_variance"), 1.0f));
  const float bound = static_cast<float>(1.0 / std::sqrt(512.0));
  Tensor fc = *a.Variable("fc.weight");
  EXPECT_TRUE(std::all_of(fc.data<float>(), fc.data<float>() + fc.numel(),
                          [&](float x) { return std::abs(x) <= bound; }));
}

TEST(InMemoryDataSourceTest, ShufflesAPermutationPerEpoch) {
  Tensor images = Tensor::Empty({10, 1, 1, 1}, DType::kF32);
  Tensor labels = Tensor::Empty({10}, DType::kI32);
  for (int i = 0; i < 10; ++i) {
    images.data<float>()[i] = static_cast<float>(i);
    labels.data<int32_t>()[i] = i;
  }
  auto source = InMemoryDataSource::Create(images, labels, {.batch_size = 3, .shuffle = true});
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_EQ((*source)->batches_per_epoch(), 4);
  auto epoch = [&](int64_t e) {
    std::vector<int> order;
    EXPECT_TRUE((*source)->Reset(e).ok());
    Batch batch;
    while (*(*source)->Next(&batch)) {
      for (int64_t i = 0; i < batch.labels.numel(); ++i) {
        EXPECT_EQ(batch.images.data<float>()[i], batch.labels.data<int32_t>()[i]);
        order.push_back(batch.labels.data<int32_t>()[i]);
      }
    }
    return order;
  };
  std::vector<int> first = epoch(0);
  EXPECT_EQ(std::set<int>(first.begin(), first.end()).size(), 10u);
  EXPECT_EQ(first, epoch(0));
  EXPECT_NE(first, epoch(1));
}

TEST(InMemoryDataSourceTest, RejectsMismatchedLabels) {
  auto source = InMemoryDataSource::Create(Tensor::Zeros({4, 1, 2, 2}, DType::kF32),
                                           Tensor::Zeros({3}, DType::kI32), {});
  ASSERT_FALSE(source.ok());
  EXPECT_NE(source.status().message().find("labels must be i32 [4]"), std::string::npos)
      << source.status();
}

}  // namespace
}  // namespace lockstep::train
