#include "tests/parallel/replica_training.h"

#include <algorithm>
#include <cmath>

#include "tests/train/shapes_data.h"
#include "train/models.h"

namespace lockstep::testing {
namespace {

Tensor Rows(const Tensor& tensor, int64_t first, int64_t rows) {
  Shape shape = tensor.shape();
  const size_t row_bytes = tensor.nbytes() / static_cast<size_t>(shape[0]);
  shape[0] = rows;
  return tensor.View(static_cast<size_t>(first) * row_bytes, shape, tensor.dtype());
}

train::Model MakeModel(train::LayerPtr net, train::ModelOptions options) {
  options.image_shape = {1, kImageSize, kImageSize};
  options.seed = 11;
  return train::Model(std::move(net), train::SoftmaxCrossEntropy(),
                      train::Momentum{.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-4}, options);
}

}  // namespace

const parallel::Context& WorldOfOne() {
  static const parallel::Context context = parallel::Init(nullptr, nullptr).value();
  return context;
}

train::Model MakeLeNet(train::ModelOptions options) {
  return MakeModel(train::models::LeNet5(train::testing::kShapeClasses, 1), options);
}

train::Model MakeConvNet(train::ModelOptions options, bool batch_norm) {
  auto net = std::make_shared<train::Sequential>(std::vector<train::LayerPtr>{});
  net->Add("conv1", std::make_shared<train::Conv2d>(1, 16, 3, train::Conv2dOptions{.padding = 1}));
  if (batch_norm) net->Add("bn1", std::make_shared<train::BatchNorm2d>(16));
  net->Add(std::make_shared<train::ReLU>())
      .Add("conv2", std::make_shared<train::Conv2d>(
                        16, 32, 3, train::Conv2dOptions{.stride = 2, .padding = 1}));
  if (batch_norm) net->Add("bn2", std::make_shared<train::BatchNorm2d>(32));
  net->Add(std::make_shared<train::ReLU>())
      .Add(std::make_shared<train::GlobalAvgPool>())
      .Add(std::make_shared<train::Flatten>())
      .Add("fc", std::make_shared<train::Dense>(32, train::testing::kShapeClasses));
  return MakeModel(net, options);
}

std::vector<train::Batch> GlobalBatches(int steps, int64_t global_batch) {
  train::testing::ShapeImages data =
      train::testing::MakeShapeImages(steps * global_batch, 1, kImageSize, 5);
  std::vector<train::Batch> batches;
  for (int step = 0; step < steps; ++step) {
    batches.push_back({Rows(data.images, step * global_batch, global_batch),
                       Rows(data.labels, step * global_batch, global_batch)});
  }
  return batches;
}

absl::Status TrainOnRows(train::Model& model, const std::vector<train::Batch>& batches,
                         int64_t first, int64_t rows) {
  const int64_t micro = model.options().batch_size;
  for (const train::Batch& batch : batches) {
    for (int64_t row = first; row < first + rows; row += micro) {
      LS_RETURN_IF_ERROR(
          model.TrainStep({Rows(batch.images, row, micro), Rows(batch.labels, row, micro)})
              .status());
    }
  }
  return absl::OkStatus();
}

double MaxRelativeDifference(const train::Model& a, const train::Model& b) {
  double worst = 0.0;
  for (const train::ParameterSpec& spec : b.parameters()) {
    const Tensor x = *a.Variable(spec.name);
    const Tensor y = *b.Variable(spec.name);
    double difference = 0.0, scale = 1e-30;
    for (int64_t i = 0; i < y.numel(); ++i) {
      difference = std::max(difference, std::abs(double{x.data<float>()[i]} - y.data<float>()[i]));
      scale = std::max(scale, std::abs(double{y.data<float>()[i]}));
    }
    worst = std::max(worst, difference / scale);
  }
  return worst;
}

}  // namespace lockstep::testing
