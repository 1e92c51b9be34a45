// The test device's other kernels (element-wise, dense, loss, fill, shape, optimizer): plain loops
// that sum in double, calling the op families' per-element math (ops/*_math.h) as every backend
// does; ReLU and its gradient are the CPU's element-wise kernel (ops/cpu/pointwise.h), run in
// test_nc4hw where a value may use it, and the loss, the copies and the Momentum update are the
// CPU's kernels (ops/cpu/loss.h, shape.h, optimizer.h).

#include <algorithm>
#include <vector>

#include "ops/cpu/loss.h"
#include "ops/cpu/optimizer.h"
#include "ops/cpu/pointwise.h"
#include "ops/cpu/shape.h"
#include "ops/elementwise_math.h"
#include "ops/kernel_bases.h"
#include "ops/kernel_shapes.h"
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

class BiasAddKernel : public ChannelsKernel {
 public:
  using ChannelsKernel::ChannelsKernel;
  absl::Status Run(const KernelIO& io) override {
    const float* x = io.inputs[0].data<float>();     // (N, C, inner...)
    const float* bias = io.inputs[1].data<float>();  // (C)
    float* y = io.outputs[0].data<float>();          // (N, C, inner...)
    const auto [outer, channels, inner] = geometry_;
    for (int64_t i = 0; i < outer * channels * inner; ++i) y[i] = x[i] + bias[i / inner % channels];
    return absl::OkStatus();
  }
};

class BiasAddGradKernel : public ChannelsKernel {
 public:
  using ChannelsKernel::ChannelsKernel;
  absl::Status Run(const KernelIO& io) override {
    const float* dy = io.inputs[0].data<float>();  // (N, C, inner...)
    float* dbias = io.outputs[0].data<float>();    // (C)
    const auto [outer, channels, inner] = geometry_;
    std::vector<double> sum(channels, 0.0);
    for (int64_t i = 0; i < outer * channels * inner; ++i) sum[i / inner % channels] += dy[i];
    for (int64_t c = 0; c < channels; ++c) dbias[c] = static_cast<float>(sum[c]);
    return absl::OkStatus();
  }
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

// Registers the CPU's kernel K for `op` here, in float32 and plain as everything here.
template <typename K>
bool CpuKernelHere(const char* op) {
  return KernelRegistry::Global().Register(
      {.op = op, .device = kTestDeviceType, .create = MakeFactory<K>()});
}

[[maybe_unused]] const bool kCpuKernels[] = {
    // The same bytes under another shape (ops/cpu/shape.h).
    CpuKernelHere<cpu::CopyKernel>("Flatten"),
    CpuKernelHere<cpu::CopyKernel>("Reshape"),
    // The loss and its gradient (ops/cpu/loss.h).
    CpuKernelHere<cpu::SoftmaxCrossEntropyKernel>("SoftmaxCrossEntropy"),
    CpuKernelHere<cpu::SoftmaxCrossEntropyGradKernel>("SoftmaxCrossEntropyGrad"),
    // The parameter update (ops/cpu/optimizer.h).
    CpuKernelHere<cpu::MomentumKernel>("Momentum"),
};

}  // namespace
}  // namespace lockstep::test_backend
