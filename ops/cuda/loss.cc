// CUDA kernels of the loss and metric ops; the launchers are in ops/cuda/loss.cu.
//
// Unlike the CPU kernels, these do not check the labels: that would copy them to the host and
// wait for the stream every step. A label outside [0, C) makes the loss and its gradient NaN.

#include <cstdint>

#include "graph/kernel.h"
#include "ops/cuda/cudnn_cublas.h"
#include "ops/cuda/loss_kernels.h"
#include "ops/kernel_bases.h"

namespace lockstep {
namespace {

using cuda::StreamOf;

class SoftmaxCrossEntropyKernel : public RowsKernel {
 public:
  using RowsKernel::RowsKernel;
  // The rows' losses, summed by one block for a deterministic mean.
  size_t WorkspaceBytes() const override { return rows_.n * sizeof(double); }
  absl::Status Run(const KernelIO& io) override {
    CUDA_RETURN_IF_ERROR(
        cuda::LaunchSoftmaxCrossEntropy(io.inputs[0].data<float>(),    // logits (N, C)
                                        io.inputs[1].data<int32_t>(),  // labels (N)
                                        rows_.n, rows_.classes,
                                        io.outputs[1].data<float>(),         // probs (N, C)
                                        static_cast<double*>(io.workspace),  // (N)
                                        io.outputs[0].data<float>(),         // loss []
                                        StreamOf(io)));
    return absl::OkStatus();
  }
};

class SoftmaxCrossEntropyGradKernel : public RowsKernel {
 public:
  using RowsKernel::RowsKernel;
  absl::Status Run(const KernelIO& io) override {
    CUDA_RETURN_IF_ERROR(
        cuda::LaunchSoftmaxCrossEntropyGrad(io.inputs[0].data<float>(),    // probs (N, C)
                                            io.inputs[1].data<int32_t>(),  // labels (N)
                                            io.inputs[2].data<float>(),    // dloss []
                                            rows_.n, rows_.classes,
                                            io.outputs[0].data<float>(),  // dlogits (N, C)
                                            StreamOf(io)));
    return absl::OkStatus();
  }
};

class ArgMaxKernel : public RowsKernel {
 public:
  using RowsKernel::RowsKernel;
  absl::Status Run(const KernelIO& io) override {
    CUDA_RETURN_IF_ERROR(cuda::LaunchArgMax(io.inputs[0].data<float>(),  // (N, C)
                                            rows_.n, rows_.classes,
                                            io.outputs[0].data<int32_t>(),  // (N)
                                            StreamOf(io)));
    return absl::OkStatus();
  }
};

class AccuracyCountKernel : public RowsKernel {
 public:
  using RowsKernel::RowsKernel;
  // Each row's ArgMax, compared with the labels and counted by one block.
  size_t WorkspaceBytes() const override { return rows_.n * sizeof(int32_t); }
  absl::Status Run(const KernelIO& io) override {
    CUDA_RETURN_IF_ERROR(cuda::LaunchAccuracyCount(io.inputs[0].data<float>(),    // (N, C)
                                                   io.inputs[1].data<int32_t>(),  // (N)
                                                   rows_.n, rows_.classes,
                                                   static_cast<int32_t*>(io.workspace),  // (N)
                                                   io.outputs[0].data<int32_t>(),        // []
                                                   StreamOf(io)));
    return absl::OkStatus();
  }
};

constexpr DeviceType kCUDA = DeviceType::kCUDA;

REGISTER_KERNEL({.op = "SoftmaxCrossEntropy",
                 .device = kCUDA,
                 .create = MakeFactory<SoftmaxCrossEntropyKernel>()});
REGISTER_KERNEL({.op = "SoftmaxCrossEntropyGrad",
                 .device = kCUDA,
                 .create = MakeFactory<SoftmaxCrossEntropyGradKernel>()});
REGISTER_KERNEL({.op = "ArgMax", .device = kCUDA, .create = MakeFactory<ArgMaxKernel>()});
REGISTER_KERNEL({.op = "AccuracyCount",
                 .device = kCUDA,
                 .create = MakeFactory<AccuracyCountKernel>()});

}  // namespace
}  // namespace lockstep
