// Batch normalization on CUDA through cuDNN (spatial modes: per channel over N, H, W), plain
// NCHW. The ops keep the biased batch variance where cuDNN keeps the inverse standard deviation,
// so small kernels of batch_norm.cu convert between them through the kernel's workspace. The
// running averages follow the CPU kernels: momentum * old + (1 - momentum) * batch, with the
// unbiased variance, which is cuDNN's exponential average with factor 1 - momentum.
// BatchNormRelu applies the ReLU after cuDNN and keeps one mask byte per element; its gradient
// masks dy with it before cuDNN's backward.

#include "graph/kernel.h"
#include "ops/cuda/batch_norm_kernels.h"
#include "ops/cuda/cuda_util.h"
#include "ops/cuda/cudnn_desc.h"

namespace lockstep {
namespace {

using cuda::StreamOf;
using cuda::TensorDesc;

// Training uses cuDNN's persistent kernels: on an H100 they made ResNet-50's step 9% faster
// (BENCHMARKS.md). Their reductions are deterministic but, in NCHW, kept in scaled integers,
// which can overflow to Inf/NaN on huge activations where the plain mode stays finite; the
// training loop stops on a non-finite loss.
constexpr cudnnBatchNormMode_t kTrainingMode = CUDNN_BATCHNORM_SPATIAL_PERSISTENT;
constexpr cudnnBatchNormMode_t kInferenceMode = CUDNN_BATCHNORM_SPATIAL;
const float kOne = 1.0f, kZero = 0.0f;

// What every batch-norm kernel holds: descriptors of x (N, C, ...) and of the (C) vectors.
class NormKernel : public Kernel {
 protected:
  absl::Status Init(const Node& node) {
    const Value& x = *node.inputs[0];
    channels_ = x.shape()[1];
    elements_ = NumElements(x.shape());
    epsilon_ = node.attrs.GetFloat("epsilon");
    LS_ASSIGN_OR_RETURN(x_, TensorDesc::Nchw(x.shape(), x.dtype()));
    LS_ASSIGN_OR_RETURN(channel_, TensorDesc::Nchw({channels_}, x.dtype()));
    return absl::OkStatus();
  }

  int64_t channels_ = 0;
  int64_t elements_ = 0;
  double epsilon_ = 1e-5;
  TensorDesc x_, channel_;
};

// (x, gamma, beta, running_mean, running_var) -> (y, saved_mean, saved_var, running_mean',
// running_var'[, relu mask]).
class BatchNormKernel : public NormKernel {
 public:
  static absl::StatusOr<std::unique_ptr<Kernel>> Create(const Node& node, bool relu) {
    auto kernel = std::unique_ptr<BatchNormKernel>(new BatchNormKernel());
    LS_RETURN_IF_ERROR(kernel->Init(node));
    kernel->factor_ = 1.0 - node.attrs.GetFloat("momentum");
    kernel->relu_ = relu;
    return kernel;
  }

  size_t WorkspaceBytes() const override { return channels_ * sizeof(float); }

  absl::Status Run(const KernelIO& io) override {
    const cudaStream_t stream = StreamOf(io);
    LS_ASSIGN_OR_RETURN(cudnnHandle_t handle, cuda::CudnnHandle(stream));
    for (int i : {3, 4}) {  // the running averages are updated in place
      if (io.outputs[i].raw_data() == io.inputs[i].raw_data()) continue;
      CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(io.outputs[i].raw_data(), io.inputs[i].raw_data(),
                                           io.inputs[i].nbytes(), cudaMemcpyDeviceToDevice,
                                           stream));
    }
    auto* inv_std = static_cast<float*>(io.workspace);  // (C)
    float* y = io.outputs[0].data<float>();             // (N, C, ...)
    CUDNN_RETURN_IF_ERROR(cudnnBatchNormalizationForwardTraining(
        handle, kTrainingMode, &kOne, &kZero, x_.get(), io.inputs[0].raw_data(), x_.get(), y,
        channel_.get(), io.inputs[1].raw_data(), io.inputs[2].raw_data(),  // gamma, beta (C)
        factor_, io.outputs[3].raw_data(), io.outputs[4].raw_data(),       // running (C)
        epsilon_, io.outputs[1].raw_data(), inv_std));                     // saved mean (C)
    CUDA_RETURN_IF_ERROR(cuda::LaunchVarianceFromInvStd(
        inv_std, static_cast<float>(epsilon_), channels_, io.outputs[2].data<float>(), stream));
    if (relu_) {
      CUDA_RETURN_IF_ERROR(
          cuda::LaunchReluWithMask(y, io.outputs[5].data<uint8_t>(), elements_, stream));
    }
    return absl::OkStatus();
  }

 private:
  BatchNormKernel() = default;
  double factor_ = 0.1;
  bool relu_ = false;
};

// (x, gamma, saved_mean, saved_var, dy[, relu mask]) -> (dx, dgamma, dbeta).
class BatchNormGradKernel : public NormKernel {
 public:
  static absl::StatusOr<std::unique_ptr<Kernel>> Create(const Node& node, bool relu) {
    auto kernel = std::unique_ptr<BatchNormGradKernel>(new BatchNormGradKernel());
    LS_RETURN_IF_ERROR(kernel->Init(node));
    kernel->relu_ = relu;
    return kernel;
  }

  // The (C) inverse standard deviations, then the masked dy of the fused ReLU.
  size_t WorkspaceBytes() const override {
    return MaskedOffset() + (relu_ ? elements_ * sizeof(float) : 0);
  }

  absl::Status Run(const KernelIO& io) override {
    const cudaStream_t stream = StreamOf(io);
    LS_ASSIGN_OR_RETURN(cudnnHandle_t handle, cuda::CudnnHandle(stream));
    auto* inv_std = static_cast<float*>(io.workspace);  // (C)
    CUDA_RETURN_IF_ERROR(cuda::LaunchInvStdFromVariance(
        io.inputs[3].data<float>(), static_cast<float>(epsilon_), channels_, inv_std, stream));
    const void* dy = io.inputs[4].raw_data();  // (N, C, ...)
    if (relu_) {
      auto* masked = reinterpret_cast<float*>(static_cast<char*>(io.workspace) + MaskedOffset());
      CUDA_RETURN_IF_ERROR(cuda::LaunchApplyMask(
          io.inputs[4].data<float>(), io.inputs[5].data<uint8_t>(), elements_, masked, stream));
      dy = masked;
    }
    CUDNN_RETURN_IF_ERROR(cudnnBatchNormalizationBackward(
        handle, kTrainingMode, &kOne, &kZero, &kOne, &kZero, x_.get(), io.inputs[0].raw_data(),
        x_.get(), dy, x_.get(), io.outputs[0].raw_data(), channel_.get(), io.inputs[1].raw_data(),
        io.outputs[1].raw_data(), io.outputs[2].raw_data(),  // dgamma, dbeta (C)
        epsilon_, io.inputs[2].raw_data(), inv_std));        // saved mean (C)
    return absl::OkStatus();
  }

 private:
  BatchNormGradKernel() = default;
  size_t MaskedOffset() const { return (channels_ * sizeof(float) + 255) / 256 * 256; }
  bool relu_ = false;
};

// (x, gamma, beta, mean, var) -> y with the given statistics.
class BatchNormInferenceKernel : public NormKernel {
 public:
  static absl::StatusOr<std::unique_ptr<Kernel>> Create(const Node& node) {
    auto kernel = std::unique_ptr<BatchNormInferenceKernel>(new BatchNormInferenceKernel());
    LS_RETURN_IF_ERROR(kernel->Init(node));
    return kernel;
  }

  absl::Status Run(const KernelIO& io) override {
    LS_ASSIGN_OR_RETURN(cudnnHandle_t handle, cuda::CudnnHandle(StreamOf(io)));
    CUDNN_RETURN_IF_ERROR(cudnnBatchNormalizationForwardInference(
        handle, kInferenceMode, &kOne, &kZero, x_.get(), io.inputs[0].raw_data(), x_.get(),
        io.outputs[0].raw_data(), channel_.get(), io.inputs[1].raw_data(), io.inputs[2].raw_data(),
        io.inputs[3].raw_data(), io.inputs[4].raw_data(), epsilon_));
    return absl::OkStatus();
  }

 private:
  BatchNormInferenceKernel() = default;
};

REGISTER_KERNEL({.op = "BatchNorm",
                 .device = DeviceType::kCUDA,
                 .create = [](const Node& node, const KernelContext&) {
                   return BatchNormKernel::Create(node, false);
                 }});
REGISTER_KERNEL({.op = "BatchNormRelu",
                 .device = DeviceType::kCUDA,
                 .create = [](const Node& node, const KernelContext&) {
                   return BatchNormKernel::Create(node, true);
                 }});
REGISTER_KERNEL({.op = "BatchNormGrad",
                 .device = DeviceType::kCUDA,
                 .create = [](const Node& node, const KernelContext&) {
                   return BatchNormGradKernel::Create(node, false);
                 }});
REGISTER_KERNEL({.op = "BatchNormReluGrad",
                 .device = DeviceType::kCUDA,
                 .create = [](const Node& node, const KernelContext&) {
                   return BatchNormGradKernel::Create(node, true);
                 }});
REGISTER_KERNEL({.op = "BatchNormInference",
                 .device = DeviceType::kCUDA,
                 .create = [](const Node& node, const KernelContext&) {
                   return BatchNormInferenceKernel::Create(node);
                 }});

}  // namespace
}  // namespace lockstep
