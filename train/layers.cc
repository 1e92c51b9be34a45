#include "train/layers.h"

#include "absl/strings/str_cat.h"

namespace lockstep::train {
namespace {

std::vector<int64_t> Pair(int64_t value) { return {value, value}; }

Attrs PoolAttrs(int64_t kernel, int64_t stride, int64_t padding) {
  return {{"kernel", Pair(kernel)}, {"stride", Pair(stride)}, {"padding", Pair(padding)}};
}

// Adds bias (C) along dimension 1 of x.
Value* AddBias(const NetContext& ctx, Value* x, int64_t channels, int64_t fan_in) {
  Value* bias = ctx.Parameter("bias", {channels}, Initializer::FanInUniform(fan_in));
  return ctx.Op1("BiasAdd", {x, bias});
}

}  // namespace

NetContext NetContext::Child(absl::string_view name) const {
  NetContext child = *this;
  child.prefix_ = absl::StrCat(prefix_, name, ".");
  return child;
}

Value* NetContext::AddInput(absl::string_view name, const Shape& shape, const Initializer& init,
                            InputRole role) const {
  std::string full = absl::StrCat(prefix_, name);
  Value* value = role == InputRole::kParameter ? builder_->Parameter(full, shape)
                                               : builder_->State(full, shape);
  if (value != nullptr) specs_->push_back({std::move(full), role, shape, init});
  return value;
}

Value* NetContext::Parameter(absl::string_view name, const Shape& shape,
                             const Initializer& init) const {
  return AddInput(name, shape, init, InputRole::kParameter);
}

Value* NetContext::State(absl::string_view name, const Shape& shape,
                         const Initializer& init) const {
  return AddInput(name, shape, init, InputRole::kState);
}

std::vector<Value*> NetContext::Op(absl::string_view op, std::vector<Value*> inputs,
                                   Attrs attrs) const {
  // "layer1.0.conv1." names its nodes "layer1.0.conv1/Conv2D_12".
  std::string node_prefix = prefix_;
  if (!node_prefix.empty()) node_prefix.back() = '/';
  builder_->SetNamePrefix(std::move(node_prefix));
  return builder_->Op(op, std::move(inputs), std::move(attrs));
}

Value* NetContext::Op1(absl::string_view op, std::vector<Value*> inputs, Attrs attrs) const {
  std::vector<Value*> outputs = Op(op, std::move(inputs), std::move(attrs));
  return outputs.empty() ? nullptr : outputs[0];
}

void NetContext::Update(absl::string_view name, Value* value) const {
  if (value != nullptr) {
    builder_->graph()->AddOutput(absl::StrCat("update/", prefix_, name), value,
                                 OutputKind::kUpdate);
  }
}

Value* Conv2d::Build(const NetContext& ctx, Value* x) const {
  const int64_t fan_in = in_ / options_.groups * kernel_ * kernel_;
  Value* w = ctx.Parameter("weight", {out_, in_ / options_.groups, kernel_, kernel_},
                           Initializer::HeNormal(out_ * kernel_ * kernel_));
  Value* y = ctx.Op1("Conv2D", {x, w},
                     {{"stride", Pair(options_.stride)},
                      {"padding", Pair(options_.padding)},
                      {"dilation", Pair(options_.dilation)},
                      {"groups", options_.groups}});
  return options_.bias ? AddBias(ctx, y, out_, fan_in) : y;
}

Value* BatchNorm2d::Build(const NetContext& ctx, Value* x) const {
  Value* gamma =
      ctx.Parameter("gamma", {channels_}, Initializer::Constant(options_.zero_gamma ? 0.0 : 1.0));
  Value* beta = ctx.Parameter("beta", {channels_}, Initializer::Constant(0.0));
  Value* mean = ctx.State("moving_mean", {channels_}, Initializer::Constant(0.0));
  Value* var = ctx.State("moving_variance", {channels_}, Initializer::Constant(1.0));
  if (ctx.mode() == Mode::kEval) {
    return ctx.Op1("BatchNormInference", {x, gamma, beta, mean, var},
                   {{"epsilon", options_.epsilon}});
  }
  std::vector<Value*> outputs =
      ctx.Op(options_.sync || ctx.sync_batch_norm() ? "SyncBatchNorm" : "BatchNorm",
             {x, gamma, beta, mean, var},
             {{"epsilon", options_.epsilon}, {"momentum", options_.momentum}});
  if (outputs.empty()) return nullptr;
  ctx.Update("moving_mean", outputs[3]);
  ctx.Update("moving_variance", outputs[4]);
  return outputs[0];
}

Value* Dense::Build(const NetContext& ctx, Value* x) const {
  if (x == nullptr) return nullptr;
  const int64_t in = in_ > 0 ? in_ : x->shape().back();
  Value* w = ctx.Parameter("weight", {out_, in}, Initializer::FanInUniform(in));
  Value* y = ctx.Op1("MatMul", {x, w}, {{"transpose_b", true}});
  return bias_ ? AddBias(ctx, y, out_, in) : y;
}

Value* ReLU::Build(const NetContext& ctx, Value* x) const { return ctx.Op1("Relu", {x}); }

Value* MaxPool2d::Build(const NetContext& ctx, Value* x) const {
  return ctx.Op1("MaxPool", {x}, PoolAttrs(kernel_, stride_, padding_));
}

Value* AvgPool2d::Build(const NetContext& ctx, Value* x) const {
  return ctx.Op1("AvgPool", {x}, PoolAttrs(kernel_, stride_, padding_));
}

Value* GlobalAvgPool::Build(const NetContext& ctx, Value* x) const {
  return ctx.Op1("GlobalAvgPool", {x});
}

Value* Flatten::Build(const NetContext& ctx, Value* x) const { return ctx.Op1("Flatten", {x}); }

Sequential::Sequential(std::vector<LayerPtr> layers) {
  for (LayerPtr& layer : layers) Add(std::move(layer));
}

Sequential& Sequential::Add(LayerPtr layer) {
  return Add(absl::StrCat(layers_.size()), std::move(layer));
}

Sequential& Sequential::Add(std::string name, LayerPtr layer) {
  layers_.emplace_back(std::move(name), std::move(layer));
  return *this;
}

Value* Sequential::Build(const NetContext& ctx, Value* x) const {
  for (const auto& [name, layer] : layers_) x = layer->Build(ctx.Child(name), x);
  return x;
}

Value* Residual::Build(const NetContext& ctx, Value* x) const {
  Value* y = body_->Build(ctx, x);
  Value* shortcut = downsample_ ? downsample_->Build(ctx.Child("downsample"), x) : x;
  return ctx.Op1("Relu", {ctx.Op1("Add", {y, shortcut})});
}

namespace {

std::shared_ptr<const Sequential> Downsample(int64_t in_channels, int64_t out_channels,
                                             int64_t stride) {
  if (stride == 1 && in_channels == out_channels) return nullptr;
  auto downsample = std::make_shared<Sequential>();
  downsample->Add(
      std::make_shared<Conv2d>(in_channels, out_channels, 1, Conv2dOptions{.stride = stride}));
  downsample->Add(std::make_shared<BatchNorm2d>(out_channels));
  return downsample;
}

}  // namespace

LayerPtr BasicBlock(int64_t in_channels, int64_t planes, int64_t stride, bool zero_init_residual) {
  auto body = std::make_shared<Sequential>();
  body->Add("conv1", std::make_shared<Conv2d>(in_channels, planes, 3,
                                              Conv2dOptions{.stride = stride, .padding = 1}))
      .Add("bn1", std::make_shared<BatchNorm2d>(planes))
      .Add("relu", std::make_shared<ReLU>())
      .Add("conv2", std::make_shared<Conv2d>(planes, planes, 3, Conv2dOptions{.padding = 1}))
      .Add("bn2", std::make_shared<BatchNorm2d>(
                      planes, BatchNorm2dOptions{.zero_gamma = zero_init_residual}));
  return std::make_shared<Residual>(body, Downsample(in_channels, planes, stride));
}

LayerPtr Bottleneck(int64_t in_channels, int64_t planes, int64_t stride, bool zero_init_residual) {
  const int64_t out_channels = planes * kBottleneckExpansion;
  auto body = std::make_shared<Sequential>();
  body->Add("conv1", std::make_shared<Conv2d>(in_channels, planes, 1))
      .Add("bn1", std::make_shared<BatchNorm2d>(planes))
      .Add("relu1", std::make_shared<ReLU>())
      .Add("conv2", std::make_shared<Conv2d>(planes, planes, 3,
                                             Conv2dOptions{.stride = stride, .padding = 1}))
      .Add("bn2", std::make_shared<BatchNorm2d>(planes))
      .Add("relu2", std::make_shared<ReLU>())
      .Add("conv3", std::make_shared<Conv2d>(planes, out_channels, 1))
      .Add("bn3", std::make_shared<BatchNorm2d>(
                      out_channels, BatchNorm2dOptions{.zero_gamma = zero_init_residual}));
  return std::make_shared<Residual>(body, Downsample(in_channels, out_channels, stride));
}

}  // namespace lockstep::train
