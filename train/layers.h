#pragma once

// Layers (MindSpore cells, PyTorch modules): immutable descriptions that add their nodes to a
// graph when built. The same layer objects build the training graph (BatchNorm with batch
// statistics) and the eval graph (BatchNormInference), creating parameters and state in the same
// order, so both graphs place them at the same offsets of the flat buffers.
//
// Names are hierarchical, as torchvision's: "layer1.0.conv1.weight". Leaf names follow
// MindSpore: conv and dense "weight"/"bias", batch norm "gamma", "beta" (parameters) and
// "moving_mean", "moving_variance" (state). Nodes are named "<layer path>/<Op>_<id>".

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "graph/builder.h"
#include "train/init.h"

namespace lockstep::train {

enum class Mode { kTrain, kEval };

// A parameter or state input the net created, in creation order.
struct ParameterSpec {
  std::string name;
  InputRole role = InputRole::kParameter;
  Shape shape;
  Initializer init;
};

// What a layer sees while it adds its nodes: the builder, the mode and its name prefix.
class NetContext {
 public:
  NetContext(Builder* builder, Mode mode, std::vector<ParameterSpec>* specs)
      : builder_(builder), mode_(mode), specs_(specs) {}

  // The context of a child layer called `name`.
  NetContext Child(absl::string_view name) const;

  Value* Parameter(absl::string_view name, const Shape& shape, const Initializer& init) const;
  Value* State(absl::string_view name, const Shape& shape, const Initializer& init) const;
  std::vector<Value*> Op(absl::string_view op, std::vector<Value*> inputs, Attrs attrs = {}) const;
  Value* Op1(absl::string_view op, std::vector<Value*> inputs, Attrs attrs = {}) const;
  // Marks a state update (batch norm running statistics) as the graph output "update/<name>".
  void Update(absl::string_view name, Value* value) const;

  Mode mode() const { return mode_; }
  // Every BatchNorm2d normalises over the global batch (SyncBatchNorm), whatever its options.
  bool sync_batch_norm() const { return sync_batch_norm_; }
  void set_sync_batch_norm(bool sync) { sync_batch_norm_ = sync; }
  const std::string& prefix() const { return prefix_; }  // "layer1.0.conv1."
  Builder& builder() const { return *builder_; }

 private:
  Value* AddInput(absl::string_view name, const Shape& shape, const Initializer& init,
                  InputRole role) const;

  Builder* builder_;
  Mode mode_;
  std::vector<ParameterSpec>* specs_;
  std::string prefix_;
  bool sync_batch_norm_ = false;
};

class Layer {
 public:
  virtual ~Layer() = default;
  // Adds this layer's nodes reading x and returns its output (nullptr after a builder error,
  // which the builder keeps).
  virtual Value* Build(const NetContext& ctx, Value* x) const = 0;
};
using LayerPtr = std::shared_ptr<const Layer>;

struct Conv2dOptions {
  int64_t stride = 1;
  int64_t padding = 0;
  int64_t dilation = 1;
  int64_t groups = 1;
  bool bias = false;  // as MindSpore's Conv2d
};

// weight (out, in / groups, k, k), He normal (fan out); bias U(+-1/sqrt(fan_in)).
class Conv2d : public Layer {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel, Conv2dOptions options = {})
      : in_(in_channels), out_(out_channels), kernel_(kernel), options_(options) {}
  Value* Build(const NetContext& ctx, Value* x) const override;

 private:
  int64_t in_, out_, kernel_;
  Conv2dOptions options_;
};

struct BatchNorm2dOptions {
  double epsilon = 1e-5;
  double momentum = 0.9;    // running = momentum * running + (1 - momentum) * batch
  bool zero_gamma = false;  // zero-init, for the last batch norm of a residual branch
  // Statistics over the whole global batch of a data-parallel job (SyncBatchNorm), which
  // per-rank batches too small for good statistics need.
  bool sync = false;
};

class BatchNorm2d : public Layer {
 public:
  explicit BatchNorm2d(int64_t channels, BatchNorm2dOptions options = {})
      : channels_(channels), options_(options) {}
  Value* Build(const NetContext& ctx, Value* x) const override;

 private:
  int64_t channels_;
  BatchNorm2dOptions options_;
};

// y = x W^T + b for x (N, in), W (out, in), both U(+-1/sqrt(in)) as PyTorch's Linear.
// in_features 0 takes the width of the input (LeNet at any image size).
class Dense : public Layer {
 public:
  Dense(int64_t in_features, int64_t out_features, bool bias = true)
      : in_(in_features), out_(out_features), bias_(bias) {}
  Value* Build(const NetContext& ctx, Value* x) const override;

 private:
  int64_t in_, out_;
  bool bias_;
};

class ReLU : public Layer {
 public:
  Value* Build(const NetContext& ctx, Value* x) const override;
};

// Windows of kernel x kernel every `stride`, as MindSpore's pooling (stride is not the kernel by
// default).
class MaxPool2d : public Layer {
 public:
  MaxPool2d(int64_t kernel, int64_t stride, int64_t padding = 0)
      : kernel_(kernel), stride_(stride), padding_(padding) {}
  Value* Build(const NetContext& ctx, Value* x) const override;

 private:
  int64_t kernel_, stride_, padding_;
};

class AvgPool2d : public Layer {
 public:
  AvgPool2d(int64_t kernel, int64_t stride, int64_t padding = 0)
      : kernel_(kernel), stride_(stride), padding_(padding) {}
  Value* Build(const NetContext& ctx, Value* x) const override;

 private:
  int64_t kernel_, stride_, padding_;
};

// (N, C, H, W) -> (N, C, 1, 1).
class GlobalAvgPool : public Layer {
 public:
  Value* Build(const NetContext& ctx, Value* x) const override;
};

// (N, ...) -> (N, product of the rest).
class Flatten : public Layer {
 public:
  Value* Build(const NetContext& ctx, Value* x) const override;
};

// Children run in order, each named (its index by default) in the parameter names.
class Sequential : public Layer {
 public:
  Sequential() = default;
  explicit Sequential(std::vector<LayerPtr> layers);
  Sequential& Add(LayerPtr layer);
  Sequential& Add(std::string name, LayerPtr layer);
  Value* Build(const NetContext& ctx, Value* x) const override;

 private:
  std::vector<std::pair<std::string, LayerPtr>> layers_;
};

// relu(body(x) + shortcut(x)); the shortcut is the identity or a "downsample" branch. The body's
// children are named in the block itself (conv1, bn1, ...), as torchvision's blocks.
class Residual : public Layer {
 public:
  Residual(std::shared_ptr<const Sequential> body, std::shared_ptr<const Sequential> downsample)
      : body_(std::move(body)), downsample_(std::move(downsample)) {}
  Value* Build(const NetContext& ctx, Value* x) const override;

 private:
  std::shared_ptr<const Sequential> body_;
  std::shared_ptr<const Sequential> downsample_;  // null: identity
};

// ResNet-18/34's block: 3x3 (stride) -> BN -> ReLU -> 3x3 -> BN, plus the shortcut.
LayerPtr BasicBlock(int64_t in_channels, int64_t planes, int64_t stride, bool zero_init_residual);
// ResNet-50 v1.5's bottleneck: 1x1 -> 3x3 (stride) -> 1x1 (4 x planes), each followed by BN.
LayerPtr Bottleneck(int64_t in_channels, int64_t planes, int64_t stride, bool zero_init_residual);
inline constexpr int64_t kBottleneckExpansion = 4;

}  // namespace lockstep::train
