#include "ops/cpu/optimizer.h"

#include <cmath>

#include "graph/kernel.h"
#include "ops/optimizer_attrs.h"
#include "ops/optimizer_math.h"

namespace lockstep {
namespace cpu {

MomentumKernel::MomentumKernel(const Node& node) : params_(MomentumParamsOf(node)) {}

absl::Status MomentumKernel::Run(const KernelIO& io) {
  const math::MomentumInputs in(io.inputs.size());
  if (in.dynamic && *io.inputs[in.finite()].data<float>() == 0.0f) return absl::OkStatus();
  // A local copy, which the stores below cannot alias.
  math::MomentumParams params = params_;
  if (in.dynamic) {
    params.unscale =
        math::DynamicUnscale(params.unscale, *io.inputs[in.loss_scale()].data<float>());
  }
  const float lr = *io.inputs[in.lr()].data<float>();  // []
  for (size_t t = 0; t < in.tensors; ++t) {
    const float* param = io.inputs[in.param(t)].data<float>();    // any shape
    const float* grad = io.inputs[in.grad(t)].data<float>();      // same shape as param
    const float* moment = io.inputs[in.moment(t)].data<float>();  // same shape as param
    float* new_param = io.outputs[2 * t].data<float>();           // same memory as param
    float* new_moment = io.outputs[2 * t + 1].data<float>();      // same memory as moment
    const int64_t n = io.outputs[2 * t].numel();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      const math::ParamAndMoment next =
          math::MomentumStep(params, lr, param[i], grad[i], moment[i]);
      new_param[i] = next.param;
      new_moment[i] = next.moment;
    }
  }
  return absl::OkStatus();
}

}  // namespace cpu

namespace {

// Each tensor's param, gradient, moment and updates in the param's layout (convolution weights
// are blocked); the scalars plain.
LayoutChoice EachTensorInItsParamLayout(const Node& node,
                                        const std::vector<Layout>& producer_layouts,
                                        const SharedLayouts&) {
  const math::MomentumInputs in(node.inputs.size());
  LayoutChoice choice;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    choice.inputs.push_back(i < in.lr() ? producer_layouts[in.param(i / 3)] : Layout::kPlain);
  }
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    choice.outputs.push_back(producer_layouts[in.param(o / 2)]);
  }
  return choice;
}

REGISTER_KERNEL({.op = "Momentum",
                 .create = MakeFactory<cpu::MomentumKernel>(),
                 .layouts = EachTensorInItsParamLayout});

class AccumulateKernel : public Kernel {
 public:
  explicit AccumulateKernel(const Node&) {}

  absl::Status Run(const KernelIO& io) override {
    const float* accum = io.inputs[0].data<float>();  // any shape
    const float* grad = io.inputs[1].data<float>();   // same shape as accum
    const float beta = *io.inputs[2].data<float>();   // []
    float* new_accum = io.outputs[0].data<float>();   // same memory as accum
    const int64_t n = io.outputs[0].numel();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) new_accum[i] = math::AccumulateStep(beta, accum[i], grad[i]);
    return absl::OkStatus();
  }
};

// The gradient's layout, which the accumulator (state) takes when it is first read here.
LayoutChoice GradientLayout(const Node&, const std::vector<Layout>& producer_layouts,
                            const SharedLayouts&) {
  const Layout gradient = producer_layouts[1];
  return {{gradient, gradient, Layout::kPlain}, {gradient}};
}

REGISTER_KERNEL({.op = "Accumulate",
                 .create = MakeFactory<AccumulateKernel>(),
                 .layouts = GradientLayout});

// Any layout: blocked padding holds zeros, which are finite.
class AllFiniteKernel : public Kernel {
 public:
  explicit AllFiniteKernel(const Node&) {}

  absl::Status Run(const KernelIO& io) override {
    bool finite = true;
    for (const Tensor& input : io.inputs) {
      const float* x = input.data<float>();
      const int64_t n = input.numel();
      bool all = true;
#pragma omp parallel for schedule(static) reduction(&& : all)
      for (int64_t i = 0; i < n; ++i) all = all && std::isfinite(x[i]);
      finite = finite && all;
    }
    *io.outputs[0].data<float>() = finite ? 1.0f : 0.0f;
    return absl::OkStatus();
  }
};

REGISTER_KERNEL({.op = "AllFinite",
                 .create = MakeFactory<AllFiniteKernel>(),
                 .layouts = InputLayoutsPlainOutputs});

class UpdateLossScaleKernel : public Kernel {
 public:
  explicit UpdateLossScaleKernel(const Node& node) : rule_(LossScaleRuleOf(node)) {}

  absl::Status Run(const KernelIO& io) override {
    float& scale = *io.outputs[0].data<float>();           // same memory as input 0
    int32_t& good_steps = *io.outputs[1].data<int32_t>();  // same memory as input 1
    const bool finite = *io.inputs[2].data<float>() != 0.0f;
    const math::LossScaleState next =
        math::LossScaleStep({scale, good_steps}, finite, rule_.factor, rule_.window);
    scale = next.scale;
    good_steps = next.good_steps;
    return absl::OkStatus();
  }

 private:
  LossScaleRule rule_;
};

REGISTER_KERNEL({.op = "UpdateLossScale", .create = MakeFactory<UpdateLossScaleKernel>()});

}  // namespace
}  // namespace lockstep
