// CUDA kernels of the element-wise ops: the Kernel classes, whose Run queues a launcher of
// ops/cuda/elementwise.cu on the device's compute stream.

#include <cstdint>

#include "graph/kernel.h"
#include "ops/cuda/cuda_util.h"
#include "ops/cuda/elementwise_kernels.h"
#include "ops/kernel_shapes.h"

namespace lockstep {
namespace {

using cuda::StreamOf;

class AddKernel : public Kernel {
 public:
  explicit AddKernel(const Node&) {}
  absl::Status Run(const KernelIO& io) override {
    CUDA_RETURN_IF_ERROR(cuda::LaunchAdd(io.inputs[0].data<float>(),   // any shape
                                         io.inputs[1].data<float>(),   // same shape
                                         io.outputs[0].data<float>(),  // same shape
                                         io.outputs[0].numel(), StreamOf(io)));
    return absl::OkStatus();
  }
};

class AddReluKernel : public Kernel {
 public:
  explicit AddReluKernel(const Node&) {}
  absl::Status Run(const KernelIO& io) override {
    CUDA_RETURN_IF_ERROR(cuda::LaunchAddRelu(io.inputs[0].data<float>(),   // any shape
                                             io.inputs[1].data<float>(),   // same shape
                                             io.outputs[0].data<float>(),  // same shape
                                             io.outputs[0].numel(), StreamOf(io)));
    return absl::OkStatus();
  }
};

class ReluKernel : public Kernel {
 public:
  explicit ReluKernel(const Node&) {}
  absl::Status Run(const KernelIO& io) override {
    CUDA_RETURN_IF_ERROR(cuda::LaunchRelu(io.inputs[0].data<float>(),   // any shape
                                          io.outputs[0].data<float>(),  // same shape
                                          io.outputs[0].numel(), StreamOf(io)));
    return absl::OkStatus();
  }
};

class ReluGradKernel : public Kernel {
 public:
  explicit ReluGradKernel(const Node&) {}
  absl::Status Run(const KernelIO& io) override {
    CUDA_RETURN_IF_ERROR(cuda::LaunchReluGrad(io.inputs[0].data<float>(),   // x, any shape
                                              io.inputs[1].data<float>(),   // dy, same shape
                                              io.outputs[0].data<float>(),  // dx, same shape
                                              io.outputs[0].numel(), StreamOf(io)));
    return absl::OkStatus();
  }
};

class AddReluGradKernel : public Kernel {
 public:
  explicit AddReluGradKernel(const Node&) {}
  absl::Status Run(const KernelIO& io) override {
    CUDA_RETURN_IF_ERROR(cuda::LaunchAddReluGrad(io.inputs[0].data<float>(),   // x, any shape
                                                 io.inputs[1].data<float>(),   // dy1, same shape
                                                 io.inputs[2].data<float>(),   // dy2, same shape
                                                 io.outputs[0].data<float>(),  // dx, same shape
                                                 io.outputs[0].numel(), StreamOf(io)));
    return absl::OkStatus();
  }
};

class ScaleKernel : public Kernel {
 public:
  explicit ScaleKernel(const Node& node)
      : scale_(static_cast<float>(node.attrs.GetFloat("scale"))) {}
  absl::Status Run(const KernelIO& io) override {
    CUDA_RETURN_IF_ERROR(cuda::LaunchScale(io.inputs[0].data<float>(), scale_,  // any shape
                                           io.outputs[0].data<float>(),         // same shape
                                           io.outputs[0].numel(), StreamOf(io)));
    return absl::OkStatus();
  }

 private:
  float scale_;
};

class FillKernel : public Kernel {
 public:
  explicit FillKernel(const Node& node)
      : value_(static_cast<float>(node.attrs.GetFloat("value"))) {}
  absl::Status Run(const KernelIO& io) override {
    CUDA_RETURN_IF_ERROR(cuda::LaunchFill(io.outputs[0].data<float>(), value_,  // attr shape
                                          io.outputs[0].numel(), StreamOf(io)));
    return absl::OkStatus();
  }

 private:
  float value_;
};

template <typename From>
class CastKernel : public Kernel {
 public:
  explicit CastKernel(const Node&) {}
  absl::Status Run(const KernelIO& io) override {
    const From* x = static_cast<const From*>(io.inputs[0].raw_data());  // any shape
    const Tensor& y = io.outputs[0];                                    // same shape
    switch (y.dtype()) {
      case DType::kF32:
        return Convert(x, y.data<float>(), y.numel(), StreamOf(io));
      case DType::kF64:
        return Convert(x, y.data<double>(), y.numel(), StreamOf(io));
      case DType::kI32:
        return Convert(x, y.data<int32_t>(), y.numel(), StreamOf(io));
      case DType::kI64:
        return Convert(x, y.data<int64_t>(), y.numel(), StreamOf(io));
      default:
        return absl::UnimplementedError(
            absl::StrCat("Cast to ", DTypeName(y.dtype()), " is not implemented"));
    }
  }

 private:
  template <typename To>
  static absl::Status Convert(const From* x, To* y, int64_t n, cudaStream_t stream) {
    CUDA_RETURN_IF_ERROR(cuda::LaunchCast(x, y, n, stream));
    return absl::OkStatus();
  }
};

class BiasAddKernel : public Kernel {
 public:
  explicit BiasAddKernel(const Node& node) : g_(node.inputs[0]->shape()) {}
  absl::Status Run(const KernelIO& io) override {
    CUDA_RETURN_IF_ERROR(cuda::LaunchBiasAdd(io.inputs[0].data<float>(),   // (N, C, ...)
                                             io.inputs[1].data<float>(),   // (C)
                                             io.outputs[0].data<float>(),  // (N, C, ...)
                                             g_.outer, g_.channels, g_.inner, StreamOf(io)));
    return absl::OkStatus();
  }

 private:
  ChannelGeometry g_;
};

class BiasAddGradKernel : public Kernel {
 public:
  explicit BiasAddGradKernel(const Node& node) : g_(node.inputs[0]->shape()) {}
  absl::Status Run(const KernelIO& io) override {
    CUDA_RETURN_IF_ERROR(cuda::LaunchBiasAddGrad(io.inputs[0].data<float>(),   // (N, C, ...)
                                                 io.outputs[0].data<float>(),  // (C)
                                                 g_.outer, g_.channels, g_.inner, StreamOf(io)));
    return absl::OkStatus();
  }

 private:
  ChannelGeometry g_;
};

constexpr DeviceType kCUDA = DeviceType::kCUDA;

REGISTER_KERNEL({.op = "Add", .device = kCUDA, .create = MakeFactory<AddKernel>()});
REGISTER_KERNEL({.op = "AddRelu", .device = kCUDA, .create = MakeFactory<AddReluKernel>()});
REGISTER_KERNEL({.op = "AddReluGrad", .device = kCUDA, .create = MakeFactory<AddReluGradKernel>()});
REGISTER_KERNEL({.op = "Relu", .device = kCUDA, .create = MakeFactory<ReluKernel>()});
REGISTER_KERNEL({.op = "ReluGrad", .device = kCUDA, .create = MakeFactory<ReluGradKernel>()});
REGISTER_KERNEL({.op = "Scale", .device = kCUDA, .create = MakeFactory<ScaleKernel>()});
REGISTER_KERNEL({.op = "Fill", .device = kCUDA, .create = MakeFactory<FillKernel>()});
REGISTER_KERNEL({.op = "Cast", .device = kCUDA, .create = MakeFactory<CastKernel<float>>()});
REGISTER_KERNEL({.op = "Cast",
                 .device = kCUDA,
                 .dtype = DType::kF64,
                 .create = MakeFactory<CastKernel<double>>()});
REGISTER_KERNEL({.op = "Cast",
                 .device = kCUDA,
                 .dtype = DType::kI32,
                 .create = MakeFactory<CastKernel<int32_t>>()});
REGISTER_KERNEL({.op = "Cast",
                 .device = kCUDA,
                 .dtype = DType::kI64,
                 .create = MakeFactory<CastKernel<int64_t>>()});
REGISTER_KERNEL({.op = "BiasAdd", .device = kCUDA, .create = MakeFactory<BiasAddKernel>()});
REGISTER_KERNEL({.op = "BiasAddGrad", .device = kCUDA, .create = MakeFactory<BiasAddGradKernel>()});

}  // namespace
}  // namespace lockstep
