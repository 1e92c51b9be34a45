#include "train/models.h"

#include "absl/strings/str_cat.h"

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

LayerPtr ResNet(BlockKind kind, const std::array<int, 4>& blocks, int64_t num_classes,
                const ResNetOptions& options) {
  const bool bottleneck = kind == BlockKind::kBottleneck;
  const int64_t expansion = bottleneck ? kBottleneckExpansion : 1;
  auto net = std::make_shared<Sequential>();
  net->Add("conv1", std::make_shared<Conv2d>(options.in_channels, 64, 7,
                                             Conv2dOptions{.stride = 2, .padding = 3}))
      .Add("bn1", std::make_shared<BatchNorm2d>(64))
      .Add("relu", std::make_shared<ReLU>())
      .Add("maxpool", std::make_shared<MaxPool2d>(3, 2, 1));
  int64_t channels = 64;
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t planes = int64_t{64} << stage;
    auto layer = std::make_shared<Sequential>();
    for (int i = 0; i < blocks[stage]; ++i) {
      const int64_t stride = stage > 0 && i == 0 ? 2 : 1;
      layer->Add(bottleneck ? Bottleneck(channels, planes, stride, options.zero_init_residual)
                            : BasicBlock(channels, planes, stride, options.zero_init_residual));
      channels = planes * expansion;
    }
    net->Add(absl::StrCat("layer", stage + 1), layer);
  }
  net->Add("avgpool", std::make_shared<GlobalAvgPool>())
      .Add("flatten", std::make_shared<Flatten>())
      .Add("fc", std::make_shared<Dense>(channels, num_classes));
  return net;
}

LayerPtr ResNet18(int64_t num_classes, const ResNetOptions& options) {
  return ResNet(BlockKind::kBasic, {2, 2, 2, 2}, num_classes, options);
}

LayerPtr ResNet50(int64_t num_classes, const ResNetOptions& options) {
  return ResNet(BlockKind::kBottleneck, {3, 4, 6, 3}, num_classes, options);
}

}  // namespace lockstep::train::models
