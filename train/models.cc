#include "train/models.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/logging.h"

namespace lockstep::train::models {

LayerPtr LeNet5(int64_t num_classes, int64_t in_channels) {
  auto net = std::make_shared<Sequential>();
  net->Add("conv1", std::make_shared<Conv2d>(in_channels, 6, 5))
      .Add("relu1", std::make_shared<ReLU>())
      .Add("pool1", std::make_shared<MaxPool2d>(2, 2))
      .Add("conv2", std::make_shared<Conv2d>(6, 16, 5))
      .Add("relu2", std::make_shared<ReLU>())
      .Add("pool2", std::make_shared<MaxPool2d>(2, 2))
      .Add("flatten", std::make_shared<Flatten>())
      .Add("fc1", std::make_shared<Dense>(0, 120))
      .Add("relu3", std::make_shared<ReLU>())
      .Add("fc2", std::make_shared<Dense>(120, 84))
      .Add("relu4", std::make_shared<ReLU>())
      .Add("fc3", std::make_shared<Dense>(84, num_classes));
  return net;
}

namespace {

// Stages "layer1", "layer2", ... of blocks[i] blocks with base_planes << i planes (stride 2 from
// the second stage on), then global average pooling and the dense classifier.
void AddStagesAndHead(Sequential& net, BlockKind kind, const std::vector<int>& blocks,
                      int64_t base_planes, int64_t num_classes, const ResNetOptions& options) {
  const bool bottleneck = kind == BlockKind::kBottleneck;
  const int64_t expansion = bottleneck ? kBottleneckExpansion : 1;
  int64_t channels = base_planes;
  for (size_t stage = 0; stage < blocks.size(); ++stage) {
    const int64_t planes = base_planes << stage;
    auto layer = std::make_shared<Sequential>();
    for (int i = 0; i < blocks[stage]; ++i) {
      const int64_t stride = stage > 0 && i == 0 ? 2 : 1;
      layer->Add(bottleneck ? Bottleneck(channels, planes, stride, options.zero_init_residual)
                            : BasicBlock(channels, planes, stride, options.zero_init_residual));
      channels = planes * expansion;
    }
    net.Add(absl::StrCat("layer", stage + 1), layer);
  }
  net.Add("avgpool", std::make_shared<GlobalAvgPool>())
      .Add("flatten", std::make_shared<Flatten>())
      .Add("fc", std::make_shared<Dense>(channels, num_classes));
}

}  // namespace

LayerPtr ResNet(BlockKind kind, const std::array<int, 4>& blocks, int64_t num_classes,
                const ResNetOptions& options) {
  auto net = std::make_shared<Sequential>();
  net->Add("conv1", std::make_shared<Conv2d>(options.in_channels, 64, 7,
                                             Conv2dOptions{.stride = 2, .padding = 3}))
      .Add("bn1", std::make_shared<BatchNorm2d>(64))
      .Add("relu", std::make_shared<ReLU>())
      .Add("maxpool", std::make_shared<MaxPool2d>(3, 2, 1));
  AddStagesAndHead(*net, kind, {blocks.begin(), blocks.end()}, 64, num_classes, options);
  return net;
}

LayerPtr CifarResNet(int depth, int64_t num_classes, const ResNetOptions& options) {
  LS_CHECK(depth >= 8 && (depth - 2) % 6 == 0)
      << "CIFAR ResNet depth must be 6n + 2, got " << depth;
  const int blocks = (depth - 2) / 6;
  auto net = std::make_shared<Sequential>();
  net->Add("conv1",
           std::make_shared<Conv2d>(options.in_channels, 16, 3, Conv2dOptions{.padding = 1}))
      .Add("bn1", std::make_shared<BatchNorm2d>(16))
      .Add("relu", std::make_shared<ReLU>());
  AddStagesAndHead(*net, BlockKind::kBasic, {blocks, blocks, blocks}, 16, num_classes, options);
  return net;
}

LayerPtr ResNet18(int64_t num_classes, const ResNetOptions& options) {
  return ResNet(BlockKind::kBasic, {2, 2, 2, 2}, num_classes, options);
}

LayerPtr ResNet50(int64_t num_classes, const ResNetOptions& options) {
  return ResNet(BlockKind::kBottleneck, {3, 4, 6, 3}, num_classes, options);
}

namespace {

// The models known by name, with the input side each was made for.
struct NamedModel {
  absl::string_view name;
  int64_t image_size;
  LayerPtr (*make)(int64_t num_classes);
};

constexpr NamedModel kNamedModels[] = {
    {"lenet", 32, [](int64_t classes) { return LeNet5(classes, 3); }},
    {"resnet8", 32, [](int64_t classes) { return CifarResNet(8, classes); }},
    {"resnet20", 32, [](int64_t classes) { return CifarResNet(20, classes); }},
    {"resnet18", 224, [](int64_t classes) { return ResNet18(classes); }},
    {"resnet50", 224, [](int64_t classes) { return ResNet50(classes); }},
};

absl::StatusOr<const NamedModel*> FindNamedModel(absl::string_view name) {
  for (const NamedModel& model : kNamedModels) {
    if (model.name == name) return &model;
  }
  std::vector<absl::string_view> known;
  for (const NamedModel& model : kNamedModels) known.push_back(model.name);
  return absl::InvalidArgumentError(
      absl::StrCat("unknown model '", name, "' (known: ", absl::StrJoin(known, ", "), ")"));
}

}  // namespace

absl::StatusOr<LayerPtr> ModelByName(absl::string_view name, int64_t num_classes) {
  LS_ASSIGN_OR_RETURN(const NamedModel* model, FindNamedModel(name));
  return model->make(num_classes);
}

absl::StatusOr<int64_t> DefaultImageSize(absl::string_view name) {
  LS_ASSIGN_OR_RETURN(const NamedModel* model, FindNamedModel(name));
  return model->image_size;
}

}  // namespace lockstep::train::models
