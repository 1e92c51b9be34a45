#pragma once

// Reference models, named and initialised as torchvision's (parameter leaf names as
// MindSpore's, see layers.h). Any class count; any input size the strides allow.

#include <array>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "core/status.h"
#include "train/layers.h"

namespace lockstep::train::models {

// MindSpore's LeNet5: two valid 5x5 convs (6, 16 channels, no bias) each followed by ReLU and
// 2x2 max pooling, then dense 120 -> 84 -> classes. 32x32 inputs give fc1 its classic 400 inputs;
// other sizes (16x16 at least) size fc1 from the input.
LayerPtr LeNet5(int64_t num_classes = 10, int64_t in_channels = 1);

enum class BlockKind { kBasic, kBottleneck };

struct ResNetOptions {
  int64_t in_channels = 3;
  // Zero-init the last BN gamma of every residual branch, so each block starts as the identity
  // (Goyal et al., "Accurate, Large Minibatch SGD").
  bool zero_init_residual = false;
};

// Stem (7x7/2 conv, BN, ReLU, 3x3/2 max pool), four stages of `blocks` blocks (64, 128, 256, 512
// planes; stride 2 from the second stage on), global average pooling, dense classifier.
LayerPtr ResNet(BlockKind kind, const std::array<int, 4>& blocks, int64_t num_classes,
                const ResNetOptions& options = {});
// 11,689,512 parameters at 1000 classes.
LayerPtr ResNet18(int64_t num_classes = 1000, const ResNetOptions& options = {});
// v1.5 (stride on the 3x3 conv): 25,557,032 parameters at 1000 classes.
LayerPtr ResNet50(int64_t num_classes = 1000, const ResNetOptions& options = {});

// He et al.'s CIFAR ResNets for small (32x32) images: a 3x3 conv stem of 16 channels, three
// stages of (depth - 2) / 6 basic blocks (16, 32, 64 planes; 1x1 conv shortcuts where the shape
// changes), global average pooling, dense classifier. depth 8: 78,042 parameters at 10 classes;
// depth 20: 272,474. `depth` must be 6n + 2 (a programming error otherwise).
LayerPtr CifarResNet(int depth, int64_t num_classes = 10, const ResNetOptions& options = {});

// The models above by name, for command lines: "lenet", "resnet8", "resnet20", "resnet18",
// "resnet50" (3-channel inputs). Unknown names fail with the list of known ones.
absl::StatusOr<LayerPtr> ModelByName(absl::string_view name, int64_t num_classes);
// The side of the square input a named model was made for: 224 for the ImageNet ResNets, 32 for
// LeNet and the CIFAR ResNets.
absl::StatusOr<int64_t> DefaultImageSize(absl::string_view name);

}  // namespace lockstep::train::models
