// Pooling on CUDA: MaxPool, AvgPool, GlobalAvgPool, their gradients and the argmax pair the
// FuseKernels pass makes, with own kernels (pool.cu) rather than cuDNN's, for two reasons: the
// gradients must route to the first maximum as the CPU's do (cuDNN breaks ties its own way and
// has no argmax output), and gathering gradients per input keeps them deterministic.

#include "graph/kernel.h"
#include "ops/cuda/cuda_util.h"
#include "ops/cuda/pool_kernels.h"

namespace lockstep {
namespace {

using cuda::StreamOf;
using math::PoolGeometry;

// x (N, C, H, W) and y (N, C, OH, OW) of a windowed pooling node and its attributes.
PoolGeometry GeometryOf(const Node& node, const Shape& x, const Shape& y) {
  const std::vector<int64_t>& kernel = node.attrs.GetInts("kernel");
  const std::vector<int64_t>& stride = node.attrs.GetInts("stride");
  const std::vector<int64_t>& padding = node.attrs.GetInts("padding");
  PoolGeometry g{.n = x[0], .c = x[1], .h = x[2], .w = x[3], .oh = y[2], .ow = y[3]};
  g.kh = static_cast<int>(kernel[0]);
  g.kw = static_cast<int>(kernel[1]);
  g.sh = static_cast<int>(stride[0]);
  g.sw = static_cast<int>(stride[1]);
  g.ph = static_cast<int>(padding[0]);
  g.pw = static_cast<int>(padding[1]);
  if (node.attrs.Has("count_include_pad")) {
    g.count_include_pad = node.attrs.GetBool("count_include_pad");
  }
  return g;
}

// For the forward ops: x is input 0, y output 0.
PoolGeometry ForwardGeometry(const Node& node) {
  return GeometryOf(node, node.inputs[0]->shape(), node.output(0)->shape());
}

// For the gradient ops: dy is input 0, dx output 0.
PoolGeometry BackwardGeometry(const Node& node) {
  return GeometryOf(node, node.output(0)->shape(), node.inputs[0]->shape());
}

// MaxPool: x -> y; MaxPoolWithArgmax: x -> (y, argmax), 4 bytes per element of y.
class MaxPoolKernel : public Kernel {
 public:
  explicit MaxPoolKernel(const Node& node)
      : g_(ForwardGeometry(node)), argmax_(node.outputs.size() == 2) {}
  absl::Status Run(const KernelIO& io) override {
    int32_t* argmax = argmax_ ? static_cast<int32_t*>(io.outputs[1].raw_data()) : nullptr;
    CUDA_RETURN_IF_ERROR(cuda::LaunchMaxPool(io.inputs[0].data<float>(),       // (N, C, H, W)
                                             g_, io.outputs[0].data<float>(),  // (N, C, OH, OW)
                                             argmax, StreamOf(io)));
    return absl::OkStatus();
  }

 private:
  PoolGeometry g_;
  bool argmax_;
};

// MaxPoolGrad (x, dy) -> dx finds the maxima again, into the workspace.
class MaxPoolGradKernel : public Kernel {
 public:
  explicit MaxPoolGradKernel(const Node& node)
      : g_(GeometryOf(node, node.inputs[0]->shape(), node.inputs[1]->shape())) {}
  // The argmax, then the forward's y (written, not read).
  size_t WorkspaceBytes() const override { return 2 * OutputElements() * sizeof(float); }
  absl::Status Run(const KernelIO& io) override {
    auto* argmax = static_cast<int32_t*>(io.workspace);
    auto* y = reinterpret_cast<float*>(argmax + OutputElements());
    CUDA_RETURN_IF_ERROR(
        cuda::LaunchMaxPool(io.inputs[0].data<float>(), g_, y, argmax, StreamOf(io)));
    CUDA_RETURN_IF_ERROR(cuda::LaunchMaxPoolGrad(io.inputs[1].data<float>(),  // (N, C, OH, OW)
                                                 argmax, g_,
                                                 io.outputs[0].data<float>(),  // (N, C, H, W)
                                                 StreamOf(io)));
    return absl::OkStatus();
  }

 private:
  int64_t OutputElements() const { return g_.n * g_.c * g_.oh * g_.ow; }
  PoolGeometry g_;
};

// MaxPoolGradWithArgmax (dy, argmax) -> dx.
class MaxPoolGradWithArgmaxKernel : public Kernel {
 public:
  explicit MaxPoolGradWithArgmaxKernel(const Node& node) : g_(BackwardGeometry(node)) {}
  absl::Status Run(const KernelIO& io) override {
    CUDA_RETURN_IF_ERROR(cuda::LaunchMaxPoolGrad(
        io.inputs[0].data<float>(),                            // dy (N, C, OH, OW)
        static_cast<const int32_t*>(io.inputs[1].raw_data()),  // argmax, like dy
        g_, io.outputs[0].data<float>(), StreamOf(io)));       // dx (N, C, H, W)
    return absl::OkStatus();
  }

 private:
  PoolGeometry g_;
};

class AvgPoolKernel : public Kernel {
 public:
  explicit AvgPoolKernel(const Node& node) : g_(ForwardGeometry(node)) {}
  absl::Status Run(const KernelIO& io) override {
    CUDA_RETURN_IF_ERROR(cuda::LaunchAvgPool(io.inputs[0].data<float>(),       // (N, C, H, W)
                                             g_, io.outputs[0].data<float>(),  // (N, C, OH, OW)
                                             StreamOf(io)));
    return absl::OkStatus();
  }

 private:
  PoolGeometry g_;
};

class AvgPoolGradKernel : public Kernel {
 public:
  explicit AvgPoolGradKernel(const Node& node) : g_(BackwardGeometry(node)) {}
  absl::Status Run(const KernelIO& io) override {
    CUDA_RETURN_IF_ERROR(cuda::LaunchAvgPoolGrad(io.inputs[0].data<float>(),       // (N, C, OH, OW)
                                                 g_, io.outputs[0].data<float>(),  // (N, C, H, W)
                                                 StreamOf(io)));
    return absl::OkStatus();
  }

 private:
  PoolGeometry g_;
};

// GlobalAvgPool (N, C, H, W) -> (N, C, 1, 1) and its gradient; `x` is the full-size side.
class GlobalAvgPoolKernel : public Kernel {
 public:
  GlobalAvgPoolKernel(const Node& node, bool gradient)
      : gradient_(gradient),
        planes_(node.output()->shape()[0] * node.output()->shape()[1]),
        plane_(gradient ? node.output()->shape()[2] * node.output()->shape()[3]
                        : node.inputs[0]->shape()[2] * node.inputs[0]->shape()[3]) {}
  absl::Status Run(const KernelIO& io) override {
    const float* in = io.inputs[0].data<float>();
    float* out = io.outputs[0].data<float>();
    CUDA_RETURN_IF_ERROR(gradient_
                             ? cuda::LaunchGlobalAvgPoolGrad(in, planes_, plane_, out, StreamOf(io))
                             : cuda::LaunchGlobalAvgPool(in, planes_, plane_, out, StreamOf(io)));
    return absl::OkStatus();
  }

 private:
  bool gradient_;
  int64_t planes_;  // N * C
  int64_t plane_;   // H * W
};

REGISTER_KERNEL({.op = "MaxPool",
                 .device = DeviceType::kCUDA,
                 .create = MakeFactory<MaxPoolKernel>()});
REGISTER_KERNEL({.op = "MaxPoolWithArgmax",
                 .device = DeviceType::kCUDA,
                 .create = MakeFactory<MaxPoolKernel>()});
REGISTER_KERNEL({.op = "MaxPoolGrad",
                 .device = DeviceType::kCUDA,
                 .create = MakeFactory<MaxPoolGradKernel>()});
REGISTER_KERNEL({.op = "MaxPoolGradWithArgmax",
                 .device = DeviceType::kCUDA,
                 .create = MakeFactory<MaxPoolGradWithArgmaxKernel>()});
REGISTER_KERNEL({.op = "AvgPool",
                 .device = DeviceType::kCUDA,
                 .create = MakeFactory<AvgPoolKernel>()});
REGISTER_KERNEL({.op = "AvgPoolGrad",
                 .device = DeviceType::kCUDA,
                 .create = MakeFactory<AvgPoolGradKernel>()});
REGISTER_KERNEL({.op = "GlobalAvgPool",
                 .device = DeviceType::kCUDA,
                 .create = [](const Node& node,
                              const KernelContext&) -> absl::StatusOr<std::unique_ptr<Kernel>> {
                   return std::make_unique<GlobalAvgPoolKernel>(node, false);
                 }});
REGISTER_KERNEL({.op = "GlobalAvgPoolGrad",
                 .device = DeviceType::kCUDA,
                 .create = [](const Node& node,
                              const KernelContext&) -> absl::StatusOr<std::unique_ptr<Kernel>> {
                   return std::make_unique<GlobalAvgPoolKernel>(node, true);
                 }});

}  // namespace
}  // namespace lockstep
