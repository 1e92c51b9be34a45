// CUDA kernels of Momentum and Accumulate, element-wise and in place; the launchers are in
// ops/cuda/optimizer.cu.
//
// Each Momentum node updates one parameter and launches once. The parameters, gradients and
// moments are flat buffers, so one launch over a whole bucket could replace them later.
// AllFinite launches once per input after setting its flag.

#include "graph/kernel.h"
#include "ops/cuda/cuda_util.h"
#include "ops/cuda/optimizer_kernels.h"

namespace lockstep {
namespace {

using cuda::StreamOf;

math::MomentumParams ParamsOf(const Node& node) {
  return {.momentum = static_cast<float>(node.attrs.GetFloat("momentum")),
          .weight_decay = static_cast<float>(node.attrs.GetFloat("weight_decay")),
          .unscale = static_cast<float>(1.0 / node.attrs.GetFloat("loss_scale")),
          .nesterov = node.attrs.GetBool("nesterov")};
}

class MomentumKernel : public Kernel {
 public:
  explicit MomentumKernel(const Node& node) : params_(ParamsOf(node)) {}
  absl::Status Run(const KernelIO& io) override {
    cuda::DynamicScaleInputs dynamic;
    if (io.inputs.size() == 6) dynamic = {io.inputs[4].data<float>(), io.inputs[5].data<float>()};
    CUDA_RETURN_IF_ERROR(cuda::LaunchMomentum(params_, dynamic,
                                              io.inputs[3].data<float>(),   // lr []
                                              io.inputs[0].data<float>(),   // param, any shape
                                              io.inputs[1].data<float>(),   // grad, same shape
                                              io.inputs[2].data<float>(),   // moment, same shape
                                              io.outputs[0].data<float>(),  // param's memory
                                              io.outputs[1].data<float>(),  // moment's memory
                                              io.outputs[0].numel(), StreamOf(io)));
    return absl::OkStatus();
  }

 private:
  math::MomentumParams params_;
};

class AccumulateKernel : public Kernel {
 public:
  explicit AccumulateKernel(const Node&) {}
  absl::Status Run(const KernelIO& io) override {
    CUDA_RETURN_IF_ERROR(cuda::LaunchAccumulate(io.inputs[2].data<float>(),   // beta []
                                                io.inputs[0].data<float>(),   // accum, any shape
                                                io.inputs[1].data<float>(),   // grad, same shape
                                                io.outputs[0].data<float>(),  // accum's memory
                                                io.outputs[0].numel(), StreamOf(io)));
    return absl::OkStatus();
  }
};

class AllFiniteKernel : public Kernel {
 public:
  explicit AllFiniteKernel(const Node&) {}
  absl::Status Run(const KernelIO& io) override {
    float* finite = io.outputs[0].data<float>();
    CUDA_RETURN_IF_ERROR(cuda::LaunchAllFiniteStart(finite, StreamOf(io)));
    for (const Tensor& input : io.inputs) {
      CUDA_RETURN_IF_ERROR(
          cuda::LaunchAllFiniteMark(input.data<float>(), input.numel(), finite, StreamOf(io)));
    }
    return absl::OkStatus();
  }
};

class UpdateLossScaleKernel : public Kernel {
 public:
  explicit UpdateLossScaleKernel(const Node& node)
      : factor_(static_cast<float>(node.attrs.GetFloat("factor"))),
        window_(static_cast<int32_t>(node.attrs.GetInt("window"))) {}
  absl::Status Run(const KernelIO& io) override {
    CUDA_RETURN_IF_ERROR(cuda::LaunchUpdateLossScale(io.outputs[0].data<float>(),    // scale []
                                                     io.outputs[1].data<int32_t>(),  // steps []
                                                     io.inputs[2].data<float>(),  // finite []
                                                     factor_, window_, StreamOf(io)));
    return absl::OkStatus();
  }

 private:
  float factor_;
  int32_t window_;
};

REGISTER_KERNEL({.op = "Momentum",
                 .device = DeviceType::kCUDA,
                 .create = MakeFactory<MomentumKernel>()});
REGISTER_KERNEL({.op = "Accumulate",
                 .device = DeviceType::kCUDA,
                 .create = MakeFactory<AccumulateKernel>()});
REGISTER_KERNEL({.op = "AllFinite",
                 .device = DeviceType::kCUDA,
                 .create = MakeFactory<AllFiniteKernel>()});
REGISTER_KERNEL({.op = "UpdateLossScale",
                 .device = DeviceType::kCUDA,
                 .create = MakeFactory<UpdateLossScaleKernel>()});

}  // namespace
}  // namespace lockstep
