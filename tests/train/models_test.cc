#include "train/models.h"

#include <gtest/gtest.h>

#include <map>

#include "train/model.h"

namespace lockstep::train {
namespace {

// The net's parameters when built (graph only, not compiled) for one image of `image_shape`.
std::vector<ParameterSpec> Parameters(const LayerPtr& net, const Shape& image_shape) {
  absl::StatusOr<NetGraph> built =
      BuildNetGraph(*net, SoftmaxCrossEntropy(), Mode::kEval, 1, image_shape);
  EXPECT_TRUE(built.ok()) << built.status();
  return built.ok() ? std::move(built->parameters) : std::vector<ParameterSpec>{};
}

// torchvision's counts.
TEST(ModelsTest, ResNet50HasTorchvisionParameterCount) {
  EXPECT_EQ(CountParameters(Parameters(models::ResNet50(1000), {3, 224, 224})), 25557032);
}

TEST(ModelsTest, ResNet18HasTorchvisionParameterCount) {
  EXPECT_EQ(CountParameters(Parameters(models::ResNet18(1000), {3, 224, 224})), 11689512);
}

TEST(ModelsTest, LeNet5HasMindSporeParameterCount) {
  // conv 150 + 2400 (no bias), dense 400*120+120, 120*84+84, 84*10+10.
  EXPECT_EQ(CountParameters(Parameters(models::LeNet5(10), {1, 32, 32})), 61684);
}

TEST(ModelsTest, CifarResNetsHaveTheParameterCountsOfTheirPyTorchTwins) {
  // bench/torch_sample_train.py's cifar_resnet(depth, 10) has the same counts.
  EXPECT_EQ(CountParameters(Parameters(models::CifarResNet(8, 10), {3, 32, 32})), 78042);
  EXPECT_EQ(CountParameters(Parameters(models::CifarResNet(20, 10), {3, 32, 32})), 272474);
  EXPECT_TRUE(models::ModelByName("resnet8", 10).ok());
  absl::StatusOr<LayerPtr> unknown = models::ModelByName("resnet7", 10);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("resnet20"), std::string::npos) << unknown.status();
}

TEST(ModelsTest, NamedModelsKnowTheImageSizeTheyWereMadeFor) {
  EXPECT_EQ(*models::DefaultImageSize("lenet"), 32);
  EXPECT_EQ(*models::DefaultImageSize("resnet20"), 32);
  EXPECT_EQ(*models::DefaultImageSize("resnet18"), 224);
  EXPECT_EQ(*models::DefaultImageSize("resnet50"), 224);
  EXPECT_EQ(models::DefaultImageSize("vgg").status().message(),
            "unknown model 'vgg' (known: lenet, resnet8, resnet20, resnet18, resnet50)");
}

TEST(ModelsTest, NamesFollowTorchvisionPathsWithMindSporeLeaves) {
  std::vector<ParameterSpec> specs = Parameters(models::ResNet50(10), {3, 64, 64});
  ASSERT_GT(specs.size(), 8u);
  EXPECT_EQ(specs[0].name, "conv1.weight");
  EXPECT_EQ(specs[1].name, "bn1.gamma");
  EXPECT_EQ(specs[2].name, "bn1.beta");
  EXPECT_EQ(specs[3].name, "bn1.moving_mean");
  EXPECT_EQ(specs[3].role, InputRole::kState);
  EXPECT_EQ(specs[4].name, "bn1.moving_variance");
  EXPECT_EQ(specs[5].name, "layer1.0.conv1.weight");
  EXPECT_EQ(specs.back().name, "fc.bias");
  EXPECT_EQ(specs[specs.size() - 2].shape, (Shape{10, 2048}));
  bool has_downsample = false;
  for (const ParameterSpec& spec : specs) {
    has_downsample = has_downsample || spec.name == "layer2.0.downsample.0.weight";
  }
  EXPECT_TRUE(has_downsample);
}

// v1.5 puts the stride on the 3x3 conv: layer2.0.conv2, not conv1.
TEST(ModelsTest, ResNet50StridesOnTheThreeByThreeConv) {
  absl::StatusOr<NetGraph> built =
      BuildNetGraph(*models::ResNet50(10), SoftmaxCrossEntropy(), Mode::kEval, 1, {3, 64, 64});
  ASSERT_TRUE(built.ok()) << built.status();
  std::map<std::string, int64_t> strides;  // by layer path
  for (const auto& node : built->graph->nodes()) {
    if (node->op->name() != "Conv2D") continue;
    strides[node->name.substr(0, node->name.find('/'))] = node->attrs.GetInts("stride")[0];
  }
  EXPECT_EQ(strides["layer2.0.conv1"], 1);
  EXPECT_EQ(strides["layer2.0.conv2"], 2);
  EXPECT_EQ(strides["layer2.0.downsample.0"], 2);
}

TEST(ModelsTest, AnyInputSizeAndClassCount) {
  for (Shape image : {Shape{3, 32, 32}, Shape{3, 64, 48}}) {
    absl::StatusOr<NetGraph> built =
        BuildNetGraph(*models::ResNet18(7), SoftmaxCrossEntropy(), Mode::kTrain, 2, image);
    ASSERT_TRUE(built.ok()) << built.status();
    EXPECT_EQ(built->graph->FindOutput("loss")->value->shape(), Shape{});
  }
  absl::StatusOr<NetGraph> lenet =
      BuildNetGraph(*models::LeNet5(3, 3), SoftmaxCrossEntropy(), Mode::kEval, 4, {3, 20, 24});
  ASSERT_TRUE(lenet.ok()) << lenet.status();
  EXPECT_EQ(lenet->graph->FindOutput("logits")->value->shape(), (Shape{4, 3}));
}

TEST(ModelsTest, TooSmallInputFailsNamingTheLayer) {
  absl::StatusOr<NetGraph> built =
      BuildNetGraph(*models::LeNet5(10), SoftmaxCrossEntropy(), Mode::kEval, 1, {1, 8, 8});
  ASSERT_FALSE(built.ok());
  EXPECT_NE(built.status().message().find("conv2/Conv2D"), std::string::npos) << built.status();
}

// Training graphs use batch statistics and mark the running averages as updates; eval graphs
// read the running statistics.
TEST(ModelsTest, BatchNormDependsOnMode) {
  auto count = [](const Graph& graph, const std::string& op) {
    int n = 0;
    for (const auto& node : graph.nodes()) n += node->op->name() == op;
    return n;
  };
  auto net = models::ResNet18(10);
  absl::StatusOr<NetGraph> train =
      BuildNetGraph(*net, SoftmaxCrossEntropy(), Mode::kTrain, 2, {3, 32, 32});
  absl::StatusOr<NetGraph> eval =
      BuildNetGraph(*net, SoftmaxCrossEntropy(), Mode::kEval, 2, {3, 32, 32});
  ASSERT_TRUE(train.ok() && eval.ok());
  EXPECT_EQ(count(*train->graph, "BatchNorm"), 20);
  EXPECT_EQ(count(*train->graph, "BatchNormInference"), 0);
  EXPECT_EQ(count(*eval->graph, "BatchNormInference"), 20);
  EXPECT_NE(train->graph->FindOutput("update/layer1.0.bn2.moving_mean"), nullptr);
  ASSERT_EQ(train->parameters.size(), eval->parameters.size());
  for (size_t i = 0; i < train->parameters.size(); ++i) {
    EXPECT_EQ(train->parameters[i].name, eval->parameters[i].name);
  }
}

}  // namespace
}  // namespace lockstep::train
