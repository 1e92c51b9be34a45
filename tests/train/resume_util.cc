#include "tests/train/resume_util.h"

#include <gtest/gtest.h>

#include "core/logging.h"
#include "dataset/image_folder.h"
#include "dataset/sample_dataset.h"
#include "dataset/transforms.h"

namespace lockstep::train::testing {

SampleFolder::SampleFolder() {
  absl::Status written = dataset::WriteSampleDataset(
      dir_.path(),
      {.seed = 7, .train_per_class = 4, .val_per_class = 2, .height = 20, .width = 20});
  EXPECT_TRUE(written.ok()) << written;
}

dataset::Dataset SamplePipeline(const std::string& root, int64_t batch, bool augment,
                                int num_shards, int shard_id, bool normalized) {
  absl::StatusOr<dataset::Dataset> folder = dataset::ImageFolder(root, {.shuffle = augment,
                                                                        .num_shards = num_shards,
                                                                        .shard_id = shard_id,
                                                                        .uneven_tail = !augment,
                                                                        .seed = 5});
  LS_CHECK(folder.ok()) << folder.status();
  dataset::TransformPtr crop =
      augment ? dataset::RandomCrop(kSampleImageSize, 2) : dataset::CenterCrop(kSampleImageSize);
  std::vector<dataset::TransformPtr> steps = {dataset::Decode(), crop};
  if (augment) steps.push_back(dataset::RandomHorizontalFlip());
  if (normalized) {
    steps.push_back(dataset::Normalize({127.5f}, {127.5f}));
    steps.push_back(dataset::HWC2CHW());
  }
  return folder->Map(steps).Batch(batch, /*drop_remainder=*/augment).Workers(2);
}

LayerPtr TinyNet(int64_t classes, bool batch_norm) {
  auto net = std::make_shared<Sequential>();
  net->Add("conv", std::make_shared<Conv2d>(3, 8, 3, Conv2dOptions{.padding = 1}));
  if (batch_norm) net->Add("bn", std::make_shared<BatchNorm2d>(8));
  net->Add("relu", std::make_shared<ReLU>())
      .Add("pool", std::make_shared<MaxPool2d>(2, 2))
      .Add("flatten", std::make_shared<Flatten>())
      .Add("fc", std::make_shared<Dense>(0, classes));
  return net;
}

Model TinyModel(ModelOptions options) {
  constexpr int64_t kSteps = 20;
  options.batch_size = 4;
  options.image_shape = {3, kSampleImageSize, kSampleImageSize};
  return Model(
      TinyNet(kSampleClasses), SoftmaxCrossEntropy(),
      Momentum{.lr = WarmupLr(3, CosineLr(0.1, kSteps - 3)), .momentum = 0.9, .weight_decay = 1e-4},
      std::move(options));
}

std::map<std::string, std::string> VariableBytes(const Model& model) {
  std::map<std::string, std::string> bytes;
  const Graph& graph = model.train_executor()->graph();
  for (InputRole role : {InputRole::kParameter, InputRole::kState}) {
    for (const Node* input : graph.InputNodes(role)) {
      absl::StatusOr<Tensor> value = model.Variable(input->name);
      EXPECT_TRUE(value.ok()) << value.status();
      if (!value.ok()) continue;
      bytes[input->name] =
          std::string(static_cast<const char*>(value->raw_data()), value->nbytes());
    }
  }
  return bytes;
}

}  // namespace lockstep::train::testing
