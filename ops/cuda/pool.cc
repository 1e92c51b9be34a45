// Pooling on CUDA: MaxPool, AvgPool, GlobalAvgPool, their gradients and the argmax pair the
// FuseKernels pass makes, with own kernels (pool.cu) rather than cuDNN's, for two reasons: the
// gradients must route to the first maximum as the CPU's do (cuDNN breaks ties its own way and
// has no argmax output), and gathering gradients per input keeps them deterministic. The
// windowed ones index 16-bit data in NHWC where AssignLayouts gives it (as cuDNN's convolutions
// and the batch norm around them keep it), so no reorder surrounds them.

#include "graph/kernel.h"
#include "ops/cuda/cuda_layouts.h"
#include "ops/cuda/cudnn_cublas.h"
#include "ops/cuda/device_floats.h"
#include "ops/cuda/pool_kernels.h"

namespace lockstep {
namespace {

using cuda::DeviceFloats;
using cuda::StreamOf;
using math::PoolGeometry;

// x (N, C, H, W) and y (N, C, OH, OW) of a windowed pooling node and its attributes; the node's
// 4-D data share one layout (NhwcWhereEligible), read off its first input.
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
  g.channels_last = node.inputs[0]->layout == cuda::NhwcLayout();
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

// MaxPool: x -> y; MaxPoolWithArgmax: x -> (y, argmax), 4 bytes per element of y, stored as y is
// (the argmax is declared plain, but it is the kernels' own: only MaxPoolGradWithArgmax reads
// it, with dy stored as y, so channels-last data index it without strided accesses).
template <typename T>
class MaxPoolKernel : public Kernel {
 public:
  explicit MaxPoolKernel(const Node& node)
      : g_(ForwardGeometry(node)), argmax_(node.outputs.size() == 2) {}
  absl::Status Run(const KernelIO& io) override {
    int32_t* argmax = argmax_ ? static_cast<int32_t*>(io.outputs[1].raw_data()) : nullptr;
    CUDA_RETURN_IF_ERROR(cuda::LaunchMaxPool(cuda::DataAs<const T>(io.inputs[0]),  // (N, C, H, W)
                                             g_, cuda::DataAs<T>(io.outputs[0]),   // (N, C, OH, OW)
                                             argmax, StreamOf(io)));
    return absl::OkStatus();
  }

 private:
  PoolGeometry g_;
  bool argmax_;
};

// MaxPoolGrad (x, dy) -> dx finds the maxima again, into the workspace.
template <typename T>
class MaxPoolGradKernel : public Kernel {
 public:
  explicit MaxPoolGradKernel(const Node& node)
      : g_(GeometryOf(node, node.inputs[0]->shape(), node.inputs[1]->shape())) {}
  // The argmax, then the forward's y (written, not read).
  size_t WorkspaceBytes() const override {
    return OutputElements() * (sizeof(int32_t) + sizeof(T));
  }
  absl::Status Run(const KernelIO& io) override {
    auto* argmax = static_cast<int32_t*>(io.workspace);
    auto* y = reinterpret_cast<T*>(argmax + OutputElements());
    CUDA_RETURN_IF_ERROR(
        cuda::LaunchMaxPool(cuda::DataAs<const T>(io.inputs[0]), g_, y, argmax, StreamOf(io)));
    CUDA_RETURN_IF_ERROR(
        cuda::LaunchMaxPoolGrad(cuda::DataAs<const T>(io.inputs[1]),  // (N, C, OH, OW)
                                argmax, g_,
                                cuda::DataAs<T>(io.outputs[0]),  // (N, C, H, W)
                                StreamOf(io)));
    return absl::OkStatus();
  }

 private:
  int64_t OutputElements() const { return g_.n * g_.c * g_.oh * g_.ow; }
  PoolGeometry g_;
};

// MaxPoolGradWithArgmax (dy, argmax) -> dx.
template <typename T>
class MaxPoolGradWithArgmaxKernel : public Kernel {
 public:
  explicit MaxPoolGradWithArgmaxKernel(const Node& node) : g_(BackwardGeometry(node)) {}
  absl::Status Run(const KernelIO& io) override {
    CUDA_RETURN_IF_ERROR(cuda::LaunchMaxPoolGrad(
        cuda::DataAs<const T>(io.inputs[0]),                   // dy (N, C, OH, OW)
        static_cast<const int32_t*>(io.inputs[1].raw_data()),  // argmax, like dy
        g_, cuda::DataAs<T>(io.outputs[0]), StreamOf(io)));    // dx (N, C, H, W)
    return absl::OkStatus();
  }

 private:
  PoolGeometry g_;
};

template <typename T>
class AvgPoolKernel : public Kernel {
 public:
  explicit AvgPoolKernel(const Node& node) : g_(ForwardGeometry(node)) {}
  absl::Status Run(const KernelIO& io) override {
    CUDA_RETURN_IF_ERROR(cuda::LaunchAvgPool(cuda::DataAs<const T>(io.inputs[0]),  // (N, C, H, W)
                                             g_, cuda::DataAs<T>(io.outputs[0]),   // (N, C, OH, OW)
                                             StreamOf(io)));
    return absl::OkStatus();
  }

 private:
  PoolGeometry g_;
};

template <typename T>
class AvgPoolGradKernel : public Kernel {
 public:
  explicit AvgPoolGradKernel(const Node& node) : g_(BackwardGeometry(node)) {}
  absl::Status Run(const KernelIO& io) override {
    CUDA_RETURN_IF_ERROR(
        cuda::LaunchAvgPoolGrad(cuda::DataAs<const T>(io.inputs[0]),  // (N, C, OH, OW)
                                g_, cuda::DataAs<T>(io.outputs[0]),   // (N, C, H, W)
                                StreamOf(io)));
    return absl::OkStatus();
  }

 private:
  PoolGeometry g_;
};

// GlobalAvgPool x (N, C, H, W) -> (N, C, 1, 1) and its gradient to dx; x and dx are the
// full-size side.
template <typename T>
class GlobalAvgPoolKernel : public Kernel {
 public:
  GlobalAvgPoolKernel(const Node& node, bool gradient)
      : gradient_(gradient), g_(Geometry(gradient ? *node.output() : *node.inputs[0])) {}
  absl::Status Run(const KernelIO& io) override {
    const T* in = cuda::DataAs<const T>(io.inputs[0]);
    T* out = cuda::DataAs<T>(io.outputs[0]);
    CUDA_RETURN_IF_ERROR(gradient_ ? cuda::LaunchGlobalAvgPoolGrad(in, g_, out, StreamOf(io))
                                   : cuda::LaunchGlobalAvgPool(in, g_, out, StreamOf(io)));
    return absl::OkStatus();
  }

 private:
  static cuda::GlobalPoolGeometry Geometry(const Value& full) {
    const Shape& s = full.shape();
    return {.n = s[0],
            .c = s[1],
            .plane = s[2] * s[3],
            .channels_last = full.layout == cuda::NhwcLayout()};
  }
  bool gradient_;
  cuda::GlobalPoolGeometry g_;
};

// Global pooling: the full-size side NHWC where eligible, as the convolution and batch norm
// before it keep it (a reorder between them cost more than the pooling); the (N, C, 1, 1) side
// plain, as the Flatten after it reads it.
LayoutChoice GlobalPoolLayouts(const Node& node, const std::vector<Layout>&, const SharedLayouts&) {
  const auto full_size = [](const Value& value) {
    return value.shape()[2] * value.shape()[3] > 1 ? cuda::NhwcIfEligible(value) : Layout::kPlain;
  };
  return {{full_size(*node.inputs[0])}, {full_size(*node.output())}};
}

// Windowed pooling takes NHWC where the data can have it (16-bit, NhwcWhereEligible; the
// argmax, int32, is declared plain and stored as y).
KernelDef Windowed(const char* op) {
  return {.op = op, .device = DeviceType::kCUDA, .layouts = cuda::NhwcWhereEligible};
}

KernelDef Global(const char* op) {
  return {.op = op, .device = DeviceType::kCUDA, .layouts = GlobalPoolLayouts};
}

[[maybe_unused]] const bool kRegistered[] = {
    RegisterFloatKernels<MaxPoolKernel, DeviceFloats>(Windowed("MaxPool")),
    RegisterFloatKernels<MaxPoolKernel, DeviceFloats>(Windowed("MaxPoolWithArgmax")),
    RegisterFloatKernels<MaxPoolGradKernel, DeviceFloats>(Windowed("MaxPoolGrad")),
    RegisterFloatKernels<MaxPoolGradWithArgmaxKernel, DeviceFloats>(
        Windowed("MaxPoolGradWithArgmax")),
    RegisterFloatKernels<AvgPoolKernel, DeviceFloats>(Windowed("AvgPool")),
    RegisterFloatKernels<AvgPoolGradKernel, DeviceFloats>(Windowed("AvgPoolGrad")),
    RegisterFloatKernels<GlobalAvgPoolKernel, DeviceFloats>(Global("GlobalAvgPool"), false),
    RegisterFloatKernels<GlobalAvgPoolKernel, DeviceFloats>(Global("GlobalAvgPoolGrad"), true),
};

}  // namespace
}  // namespace lockstep
