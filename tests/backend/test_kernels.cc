// The test device's other kernels (element-wise, dense, loss, fill, shape, optimizer): plain loops
// that sum in double, calling the op families' per-element math (ops/*_math.h) as every backend
// does; ReLU and its gradient are the CPU's element-wise kernel (ops/cpu/pointwise.h), run in
// test_nc4hw where a value may use it, and the loss and its gradient the CPU's (ops/cpu/loss.h).

#include <algorithm>
#include <cstring>
#include <vector>

#include "ops/cpu/loss.h"
#include "ops/cpu/pointwise.h"
#include "ops/elementwise_math.h"
#include "ops/kernel_shapes.h"
#include "ops/optimizer_math.h"
#include "tests/backend/test_backend.h"

namespace lockstep::test_backend {
namespace {

// The CPU's element-wise loop, in float32 alone.
REGISTER_KERNEL({.op = "Relu",
                 .device = kTestDeviceType,
                 .create = MakeFactory<cpu::PointwiseKernel<float, math::ReluOp>>(),
                 .layouts = BlockedWhereEligible});
REGISTER_KERNEL({.op = "ReluGrad",
                 .device = kTestDeviceType,
                 .create = MakeFactory<cpu::PointwiseKernel<float, math::ReluGradOp>>(),
                 .layouts = BlockedWhereEligible});

class BiasAddKernel : public Kernel {
 public:
  explicit BiasAddKernel(const Node& node) : geometry_(node.inputs[0]->shape()) {}
  absl::Status Run(const KernelIO& io) override {
    const float* x = io.inputs[0].data<float>();     // (N, C, inner...)
    const float* bias = io.inputs[1].data<float>();  // (C)
    float* y = io.outputs[0].data<float>();          // (N, C, inner...)
    const auto [outer, channels, inner] = geometry_;
    for (int64_t i = 0; i < outer * channels * inner; ++i) y[i] = x[i] + bias[i / inner % channels];
    return absl::OkStatus();
  }

 private:
  ChannelGeometry geometry_;
};

class BiasAddGradKernel : public Kernel {
 public:
  explicit BiasAddGradKernel(const Node& node) : geometry_(node.inputs[0]->shape()) {}
  absl::Status Run(const KernelIO& io) override {
    const float* dy = io.inputs[0].data<float>();  // (N, C, inner...)
    float* dbias = io.outputs[0].data<float>();    // (C)
    const auto [outer, channels, inner] = geometry_;
    std::vector<double> sum(channels, 0.0);
    for (int64_t i = 0; i < outer * channels * inner; ++i) sum[i / inner % channels] += dy[i];
    for (int64_t c = 0; c < channels; ++c) dbias[c] = static_cast<float>(sum[c]);
    return absl::OkStatus();
  }

 private:
  ChannelGeometry geometry_;
};

REGISTER_KERNEL({.op = "BiasAdd",
                 .device = kTestDeviceType,
                 .create = MakeFactory<BiasAddKernel>()});
REGISTER_KERNEL({.op = "BiasAddGrad",
                 .device = kTestDeviceType,
                 .create = MakeFactory<BiasAddGradKernel>()});

// y (M, N) = op(a) op(b), op() transposing where the attributes say. Built and run where its
// device is current, as CUDA's is on the cuBLASLt handle of the current device.
class MatMulKernel : public Kernel {
 public:
  MatMulKernel(const Node& node, int device)
      : a_shape_(node.inputs[0]->shape()),
        b_shape_(node.inputs[1]->shape()),
        transpose_a_(node.attrs.GetBool("transpose_a")),
        transpose_b_(node.attrs.GetBool("transpose_b")),
        device_(device) {}

  static absl::StatusOr<std::unique_ptr<Kernel>> Create(const Node& node,
                                                        const KernelContext& ctx) {
    LS_RETURN_IF_ERROR(RequireCurrent(ctx.device.index, "building MatMul"));
    return std::make_unique<MatMulKernel>(node, ctx.device.index);
  }

  absl::Status Run(const KernelIO& io) override {
    LS_RETURN_IF_ERROR(RequireCurrent(device_, "MatMul"));
    const float* a = io.inputs[0].data<float>();  // (M, K), or (K, M) transposed
    const float* b = io.inputs[1].data<float>();  // (K, N), or (N, K) transposed
    float* y = io.outputs[0].data<float>();       // (M, N)
    const int64_t m = io.outputs[0].dim(0), n = io.outputs[0].dim(1);
    const int64_t k = a_shape_[transpose_a_ ? 0 : 1];
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0.0;
        for (int64_t p = 0; p < k; ++p) {
          const float av = transpose_a_ ? a[p * a_shape_[1] + i] : a[i * a_shape_[1] + p];
          const float bv = transpose_b_ ? b[j * b_shape_[1] + p] : b[p * b_shape_[1] + j];
          sum += static_cast<double>(av) * bv;
        }
        y[i * n + j] = static_cast<float>(sum);
      }
    }
    return absl::OkStatus();
  }

 private:
  Shape a_shape_, b_shape_;
  bool transpose_a_, transpose_b_;
  int device_;
};

REGISTER_KERNEL({.op = "MatMul", .device = kTestDeviceType, .create = MatMulKernel::Create});

// The backward's seed: dloss = 1.
class FillKernel : public Kernel {
 public:
  explicit FillKernel(const Node& node)
      : value_(static_cast<float>(node.attrs.GetFloat("value"))) {}
  absl::Status Run(const KernelIO& io) override {
    float* y = io.outputs[0].data<float>();  // the attribute's shape
    std::fill(y, y + io.outputs[0].numel(), value_);
    return absl::OkStatus();
  }

 private:
  float value_;
};

REGISTER_KERNEL({.op = "Fill", .device = kTestDeviceType, .create = MakeFactory<FillKernel>()});

// Flatten and Reshape: the same bytes under another shape (plain only).
class CopyKernel : public Kernel {
 public:
  explicit CopyKernel(const Node&) {}
  absl::Status Run(const KernelIO& io) override {
    if (io.outputs[0].raw_data() != io.inputs[0].raw_data()) {
      std::memcpy(io.outputs[0].raw_data(), io.inputs[0].raw_data(), io.outputs[0].nbytes());
    }
    return absl::OkStatus();
  }
};

REGISTER_KERNEL({.op = "Flatten", .device = kTestDeviceType, .create = MakeFactory<CopyKernel>()});
REGISTER_KERNEL({.op = "Reshape", .device = kTestDeviceType, .create = MakeFactory<CopyKernel>()});

// The CPU's loss and its gradient (ops/cpu/loss.h), float32 and plain as here.
REGISTER_KERNEL({.op = "SoftmaxCrossEntropy",
                 .device = kTestDeviceType,
                 .create = MakeFactory<cpu::SoftmaxCrossEntropyKernel>()});
REGISTER_KERNEL({.op = "SoftmaxCrossEntropyGrad",
                 .device = kTestDeviceType,
                 .create = MakeFactory<cpu::SoftmaxCrossEntropyGradKernel>()});

// ((param, grad, moment) x N, lr []) -> ((param', moment') x N) in place, as ops/optimizer.cc
// defines it.
class MomentumKernel : public Kernel {
 public:
  explicit MomentumKernel(const Node& node)
      : params_{.momentum = static_cast<float>(node.attrs.GetFloat("momentum")),
                .weight_decay = static_cast<float>(node.attrs.GetFloat("weight_decay")),
                .unscale = static_cast<float>(1.0 / node.attrs.GetFloat("loss_scale")),
                .nesterov = node.attrs.GetBool("nesterov")} {}

  absl::Status Run(const KernelIO& io) override {
    const math::MomentumInputs in(io.inputs.size());
    if (in.dynamic) {
      return absl::UnimplementedError("the test device's Momentum has no dynamic loss scaling");
    }
    const float lr = *io.inputs[in.lr()].data<float>();  // []
    for (size_t t = 0; t < in.tensors; ++t) {
      const float* param = io.inputs[in.param(t)].data<float>();    // any shape
      const float* grad = io.inputs[in.grad(t)].data<float>();      // param's shape
      const float* moment = io.inputs[in.moment(t)].data<float>();  // param's shape
      float* new_param = io.outputs[2 * t].data<float>();           // param's memory
      float* new_moment = io.outputs[2 * t + 1].data<float>();      // moment's memory
      for (int64_t i = 0; i < io.outputs[2 * t].numel(); ++i) {
        const math::ParamAndMoment next =
            math::MomentumStep(params_, lr, param[i], grad[i], moment[i]);
        new_param[i] = next.param;
        new_moment[i] = next.moment;
      }
    }
    return absl::OkStatus();
  }

 private:
  math::MomentumParams params_;
};

REGISTER_KERNEL({.op = "Momentum",
                 .device = kTestDeviceType,
                 .create = MakeFactory<MomentumKernel>()});

}  // namespace
}  // namespace lockstep::test_backend
