// CUDA kernels of Momentum and Accumulate, element-wise and in place; the launchers are in
// ops/cuda/optimizer.cu.
//
// Each Momentum node updates one parameter and launches once. The parameters, gradients and
// moments are flat buffers, so one launch over a whole bucket could replace them later.

#include "graph/kernel.h"
#include "ops/cuda/cuda_util.h"
#include "ops/cuda/optimizer_kernels.h"

namespace lockstep {
namespace {

using cuda::StreamOf;

cuda::MomentumParams ParamsOf(const Node& node) {
  return {.momentum = static_cast<float>(node.attrs.GetFloat("momentum")),
          .weight_decay = static_cast<float>(node.attrs.GetFloat("weight_decay")),
          .unscale = static_cast<float>(1.0 / node.attrs.GetFloat("loss_scale")),
          .nesterov = node.attrs.GetBool("nesterov")};
}

class MomentumKernel : public Kernel {
 public:
  explicit MomentumKernel(const Node& node) : params_(ParamsOf(node)) {}
  absl::Status Run(const KernelIO& io) override {
    CUDA_RETURN_IF_ERROR(cuda::LaunchMomentum(params_,
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
  cuda::MomentumParams params_;
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

REGISTER_KERNEL({.op = "Momentum",
                 .device = DeviceType::kCUDA,
                 .create = MakeFactory<MomentumKernel>()});
REGISTER_KERNEL({.op = "Accumulate",
                 .device = DeviceType::kCUDA,
                 .create = MakeFactory<AccumulateKernel>()});

}  // namespace
}  // namespace lockstep
