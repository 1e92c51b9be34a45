#include <algorithm>
#include <cstdint>

#include "graph/kernel.h"
#include "ops/elementwise_math.h"
#include "ops/kernel_shapes.h"

namespace lockstep {
namespace {

// Applies fn(i) for i in [0, n) over OpenMP threads.
template <typename Fn>
void ParallelFor(int64_t n, Fn fn) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) fn(i);
}

class AddKernel : public Kernel {
 public:
  explicit AddKernel(const Node&) {}
  absl::Status Run(const KernelIO& io) override {
    const float* a = io.inputs[0].data<float>();  // any shape
    const float* b = io.inputs[1].data<float>();  // same shape as a
    float* y = io.outputs[0].data<float>();
    ParallelFor(io.outputs[0].numel(), [&](int64_t i) { y[i] = a[i] + b[i]; });
    return absl::OkStatus();
  }
};

class AddReluKernel : public Kernel {
 public:
  explicit AddReluKernel(const Node&) {}
  absl::Status Run(const KernelIO& io) override {
    const float* a = io.inputs[0].data<float>();  // any shape
    const float* b = io.inputs[1].data<float>();  // same shape as a
    float* y = io.outputs[0].data<float>();
    ParallelFor(io.outputs[0].numel(), [&](int64_t i) { y[i] = math::AddRelu(a[i], b[i]); });
    return absl::OkStatus();
  }
};

class ReluKernel : public Kernel {
 public:
  explicit ReluKernel(const Node&) {}
  absl::Status Run(const KernelIO& io) override {
    const float* x = io.inputs[0].data<float>();  // any shape
    float* y = io.outputs[0].data<float>();
    ParallelFor(io.outputs[0].numel(), [&](int64_t i) { y[i] = math::Relu(x[i]); });
    return absl::OkStatus();
  }
};

class ReluGradKernel : public Kernel {
 public:
  explicit ReluGradKernel(const Node&) {}
  absl::Status Run(const KernelIO& io) override {
    const float* x = io.inputs[0].data<float>();   // forward input
    const float* dy = io.inputs[1].data<float>();  // same shape
    float* dx = io.outputs[0].data<float>();
    ParallelFor(io.outputs[0].numel(), [&](int64_t i) { dx[i] = math::ReluGrad(x[i], dy[i]); });
    return absl::OkStatus();
  }
};

class AddReluGradKernel : public Kernel {
 public:
  explicit AddReluGradKernel(const Node&) {}
  absl::Status Run(const KernelIO& io) override {
    const float* x = io.inputs[0].data<float>();    // forward input or output
    const float* dy1 = io.inputs[1].data<float>();  // same shape
    const float* dy2 = io.inputs[2].data<float>();  // same shape
    float* dx = io.outputs[0].data<float>();
    ParallelFor(io.outputs[0].numel(),
                [&](int64_t i) { dx[i] = math::AddReluGrad(x[i], dy1[i], dy2[i]); });
    return absl::OkStatus();
  }
};

class ScaleKernel : public Kernel {
 public:
  explicit ScaleKernel(const Node& node)
      : scale_(static_cast<float>(node.attrs.GetFloat("scale"))) {}
  absl::Status Run(const KernelIO& io) override {
    const float* x = io.inputs[0].data<float>();  // any shape
    float* y = io.outputs[0].data<float>();
    ParallelFor(io.outputs[0].numel(), [&](int64_t i) { y[i] = scale_ * x[i]; });
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
    float* y = io.outputs[0].data<float>();  // attr shape
    std::fill(y, y + io.outputs[0].numel(), value_);
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
    switch (io.outputs[0].dtype()) {
      case DType::kF32:
        return Convert(x, io.outputs[0].data<float>(), io.outputs[0].numel());
      case DType::kF64:
        return Convert(x, io.outputs[0].data<double>(), io.outputs[0].numel());
      case DType::kI32:
        return Convert(x, io.outputs[0].data<int32_t>(), io.outputs[0].numel());
      case DType::kI64:
        return Convert(x, io.outputs[0].data<int64_t>(), io.outputs[0].numel());
      default:
        return absl::UnimplementedError(
            absl::StrCat("Cast to ", DTypeName(io.outputs[0].dtype()), " is not implemented"));
    }
  }

 private:
  template <typename To>
  static absl::Status Convert(const From* x, To* y, int64_t n) {
    ParallelFor(n, [&](int64_t i) { y[i] = static_cast<To>(x[i]); });
    return absl::OkStatus();
  }
};

class BiasAddKernel : public Kernel {
 public:
  explicit BiasAddKernel(const Node& node) : geometry_(node.inputs[0]->shape()) {}
  absl::Status Run(const KernelIO& io) override {
    const float* x = io.inputs[0].data<float>();     // (N, C, ...)
    const float* bias = io.inputs[1].data<float>();  // (C)
    float* y = io.outputs[0].data<float>();          // (N, C, ...)
    const int64_t inner = geometry_.inner;
    ParallelFor(geometry_.outer * geometry_.channels, [&](int64_t nc) {
      float b = bias[nc % geometry_.channels];
      for (int64_t i = 0; i < inner; ++i) y[nc * inner + i] = x[nc * inner + i] + b;
    });
    return absl::OkStatus();
  }

 private:
  ChannelGeometry geometry_;
};

class BiasAddGradKernel : public Kernel {
 public:
  explicit BiasAddGradKernel(const Node& node) : geometry_(node.inputs[0]->shape()) {}
  absl::Status Run(const KernelIO& io) override {
    const float* dy = io.inputs[0].data<float>();  // (N, C, ...)
    float* dbias = io.outputs[0].data<float>();    // (C)
    const ChannelGeometry& g = geometry_;
    ParallelFor(g.channels, [&](int64_t c) {
      double sum = 0.0;
      for (int64_t n = 0; n < g.outer; ++n) {
        const float* row = dy + (n * g.channels + c) * g.inner;
        for (int64_t i = 0; i < g.inner; ++i) sum += row[i];
      }
      dbias[c] = static_cast<float>(sum);
    });
    return absl::OkStatus();
  }

 private:
  ChannelGeometry geometry_;
};

REGISTER_KERNEL({.op = "Add",
                 .create = MakeFactory<AddKernel>(),
                 .layouts = SameLayoutAsFirstInput});
REGISTER_KERNEL({.op = "AddRelu",
                 .create = MakeFactory<AddReluKernel>(),
                 .layouts = SameLayoutAsFirstInput});
REGISTER_KERNEL({.op = "AddReluGrad",
                 .create = MakeFactory<AddReluGradKernel>(),
                 .layouts = SameLayoutAsFirstInput});
REGISTER_KERNEL({.op = "Relu",
                 .create = MakeFactory<ReluKernel>(),
                 .layouts = SameLayoutAsFirstInput});
REGISTER_KERNEL({.op = "ReluGrad",
                 .create = MakeFactory<ReluGradKernel>(),
                 .layouts = SameLayoutAsFirstInput});
REGISTER_KERNEL({.op = "Scale",
                 .create = MakeFactory<ScaleKernel>(),
                 .layouts = SameLayoutAsFirstInput});
REGISTER_KERNEL({.op = "Fill", .create = MakeFactory<FillKernel>()});
REGISTER_KERNEL({.op = "Cast", .create = MakeFactory<CastKernel<float>>()});
REGISTER_KERNEL({.op = "Cast", .dtype = DType::kF64, .create = MakeFactory<CastKernel<double>>()});
REGISTER_KERNEL({.op = "Cast", .dtype = DType::kI32, .create = MakeFactory<CastKernel<int32_t>>()});
REGISTER_KERNEL({.op = "Cast", .dtype = DType::kI64, .create = MakeFactory<CastKernel<int64_t>>()});
REGISTER_KERNEL({.op = "BiasAdd", .create = MakeFactory<BiasAddKernel>()});
REGISTER_KERNEL({.op = "BiasAddGrad", .create = MakeFactory<BiasAddGradKernel>()});

}  // namespace
}  // namespace lockstep
