// SyncBatchNorm kernels on CUDA, as on the CPU (parallel/ops/cpu/sync_batch_norm.cc): per-channel
// sums in double, one stream-ordered AllReduce of them (device_collectives.h), then the
// statistics and the element-wise pass. The sums live in the kernel's workspace; the compute
// stream waits for the reduction before reading them, so the host never blocks.

#include "graph/kernel.h"
#include "ops/cuda/cuda_status.h"
#include "parallel/ops/cuda/sync_batch_norm_kernels.h"
#include "parallel/ops/device_collective_kernel.h"

namespace lockstep::parallel {
namespace {

using cuda::ChannelShape;

class SyncKernel : public Kernel {
 public:
  bool communicates() const override { return true; }
  // A step with SyncBatchNorm is not recorded; whichever collective kernel the executor asks
  // first, the ranks' answer is a collective.
  absl::StatusOr<bool> HoldsOnEveryRank(bool mine) override {
    return collectives_->OnEveryRank(mine);
  }
  size_t WorkspaceBytes() const override { return 2 * shape_.channels * sizeof(double); }

 protected:
  SyncKernel(const Node& node, DeviceCollectives* collectives,
             std::unique_ptr<DeviceCollectives::Done> done)
      : shape_{node.inputs[0]->shape()[0], node.inputs[0]->shape()[1],
               NumElements(node.inputs[0]->shape()) /
                   (node.inputs[0]->shape()[0] * node.inputs[0]->shape()[1])},
        epsilon_(static_cast<float>(node.attrs.GetFloat("epsilon"))),
        collectives_(collectives),
        done_(std::move(done)) {}

  // Adds every rank's sums (2C f64 at `sums`) in place; returns the global element count.
  absl::StatusOr<int64_t> AllReduceSums(double* sums) {
    const Tensor tensor =
        Tensor::Wrap(sums, {2 * shape_.channels}, DType::kF64, collectives_->device());
    LS_RETURN_IF_ERROR(
        collectives_->EnqueueAllReduce({tensor}, ReduceOp::kSum, *done_, nullptr, nullptr)
            .status());
    LS_RETURN_IF_ERROR(collectives_->ComputeWaitsFor(*done_));
    return shape_.per_channel() * collectives_->size();
  }

  ChannelShape shape_;
  float epsilon_;
  DeviceCollectives* collectives_;
  std::unique_ptr<DeviceCollectives::Done> done_;
};

// (x, gamma, beta, running_mean, running_var) -> (y, mean, var, running_mean', running_var').
class SyncBatchNormKernel : public SyncKernel {
 public:
  SyncBatchNormKernel(const Node& node, DeviceCollectives* collectives,
                      std::unique_ptr<DeviceCollectives::Done> done)
      : SyncKernel(node, collectives, std::move(done)),
        momentum_(static_cast<float>(node.attrs.GetFloat("momentum"))) {}

  absl::Status Run(const KernelIO& io) override {
    const cudaStream_t stream = static_cast<cudaStream_t>(io.stream);
    auto* sums = static_cast<double*>(io.workspace);  // (2C)
    CUDA_RETURN_IF_ERROR(cuda::LaunchForwardSums(io.inputs[0].data<float>(), shape_, sums, stream));
    LS_ASSIGN_OR_RETURN(int64_t count, AllReduceSums(sums));
    CUDA_RETURN_IF_ERROR(
        cuda::LaunchNormalize(io.inputs[0].data<float>(),  // (N, C, H, W)
                              io.inputs[1].data<float>(),  // gamma (C)
                              io.inputs[2].data<float>(),  // beta (C)
                              sums, count, epsilon_, momentum_, shape_,
                              io.outputs[1].data<float>(),  // mean (C)
                              io.outputs[2].data<float>(),  // var (C), biased
                              io.outputs[3].data<float>(),  // running_mean (C), in place
                              io.outputs[4].data<float>(),  // running_var (C), in place
                              io.outputs[0].data<float>(),  // y (N, C, H, W)
                              stream));
    return absl::OkStatus();
  }

 private:
  float momentum_;
};

// (x, gamma, mean, var, dy) -> (dx, dgamma, dbeta); dgamma and dbeta are this rank's part.
class SyncBatchNormGradKernel : public SyncKernel {
 public:
  SyncBatchNormGradKernel(const Node& node, DeviceCollectives* collectives,
                          std::unique_ptr<DeviceCollectives::Done> done)
      : SyncKernel(node, collectives, std::move(done)) {}

  absl::Status Run(const KernelIO& io) override {
    const cudaStream_t stream = static_cast<cudaStream_t>(io.stream);
    auto* sums = static_cast<double*>(io.workspace);  // (2C)
    const float* x = io.inputs[0].data<float>();      // (N, C, H, W)
    const float* gamma = io.inputs[1].data<float>();  // (C)
    const float* mean = io.inputs[2].data<float>();   // (C)
    const float* var = io.inputs[3].data<float>();    // (C)
    const float* dy = io.inputs[4].data<float>();     // like x
    CUDA_RETURN_IF_ERROR(
        cuda::LaunchBackwardSums(x, dy, mean, var, epsilon_, shape_, sums, stream));
    CUDA_RETURN_IF_ERROR(cuda::LaunchParameterGradients(
        sums, shape_.channels, io.outputs[1].data<float>(), io.outputs[2].data<float>(), stream));
    LS_ASSIGN_OR_RETURN(int64_t count, AllReduceSums(sums));
    CUDA_RETURN_IF_ERROR(cuda::LaunchInputGradient(x, gamma, mean, var, dy, sums, count, epsilon_,
                                                   shape_, io.outputs[0].data<float>(), stream));
    return absl::OkStatus();
  }
};

template <typename K>
KernelFactory SyncFactory() {
  return [](const Node& node, const KernelContext& ctx) -> absl::StatusOr<std::unique_ptr<Kernel>> {
    LS_ASSIGN_OR_RETURN(DeviceCollectives * group, DeviceCollectivesFor(node, ctx));
    // The step waits for the statistics at once: they must not queue behind gradient buckets.
    LS_ASSIGN_OR_RETURN(DeviceCollectives * collectives, group->Urgent());
    LS_ASSIGN_OR_RETURN(std::unique_ptr<DeviceCollectives::Done> done, collectives->MakeDone());
    return std::make_unique<K>(node, collectives, std::move(done));
  };
}

REGISTER_KERNEL({.op = "SyncBatchNorm",
                 .device = DeviceType::kCUDA,
                 .create = SyncFactory<SyncBatchNormKernel>()});
REGISTER_KERNEL({.op = "SyncBatchNormGrad",
                 .device = DeviceType::kCUDA,
                 .create = SyncFactory<SyncBatchNormGradKernel>()});

}  // namespace
}  // namespace lockstep::parallel
