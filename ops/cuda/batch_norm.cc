// Batch normalization on CUDA through cuDNN (spatial modes: per channel over N, H, W). The ops
// keep the biased batch variance where cuDNN keeps the inverse standard deviation, so small kernels
// of batch_norm.cu convert between them through the kernel's workspace. The running averages follow
// the CPU kernels: momentum * old + (1 - momentum) * batch, with the unbiased variance, which is
// cuDNN's exponential average with factor 1 - momentum. BatchNormRelu applies the ReLU after cuDNN
// and keeps one mask byte per element; its gradient masks dy with it before cuDNN's backward.
// 16-bit data (bf16, f16) is normalized in NHWC for training by kernels of Lockstep's own
// (batch_norm_kernels.h): cuDNN's legacy calls ran them 50-100 times slower than the bytes allow.
// Their (C) vectors are float32: the pass gives float32 scale and bias (O2); where they arrive
// 16-bit (O3) the kernels convert them into float32 workspace, and compute dgamma and dbeta
// there before rounding them into their 16-bit outputs. Statistics and running averages are
// float32 always.

#include <type_traits>

#include "graph/kernel.h"
#include "ops/cuda/batch_norm_kernels.h"
#include "ops/cuda/cuda_layouts.h"
#include "ops/cuda/cudnn_cublas.h"
#include "ops/cuda/cudnn_desc.h"
#include "ops/cuda/device_floats.h"
#include "ops/cuda/elementwise_kernels.h"

namespace lockstep {
namespace {

using cuda::DeviceFloats;
using cuda::StreamOf;
using cuda::TensorDesc;

// Training uses cuDNN's persistent kernels: on an H100 they made ResNet-50's step 9% faster
// (BENCHMARKS.md). Their reductions are deterministic but, in NCHW, kept in scaled integers,
// which can overflow to Inf/NaN on huge activations where the plain mode stays finite; the
// training loop stops on a non-finite loss.
constexpr cudnnBatchNormMode_t kTrainingMode = CUDNN_BATCHNORM_SPATIAL_PERSISTENT;
constexpr cudnnBatchNormMode_t kInferenceMode = CUDNN_BATCHNORM_SPATIAL;
const float kOne = 1.0f, kZero = 0.0f;

// Workspace bytes for `count` values of `bytes` each, rounded up to cuDNN's 256-byte alignment.
size_t Aligned(int64_t count, size_t bytes) { return (count * bytes + 255) / 256 * 256; }

// What every batch-norm kernel holds: descriptors of x (N, C, ...) (NHWC where the layout pass
// chose it) and of the float32 (C) vectors, and whether gamma and beta are 16-bit (O3), so that
// they go through float32 copies in the workspace.
template <typename T>
class NormKernel : public Kernel {
 protected:
  absl::Status Init(const Node& node) {
    const Value& x = *node.inputs[0];
    channels_ = x.shape()[1];
    elements_ = NumElements(x.shape());
    epsilon_ = node.attrs.GetFloat("epsilon");
    half_params_ = node.inputs[1]->dtype() != DType::kF32;
    LS_ASSIGN_OR_RETURN(
        auto fields, cuda::ActivationFields(x.shape(), x.dtype(), x.layout == cuda::NhwcLayout()));
    LS_ASSIGN_OR_RETURN(x_, TensorDesc::Create(fields));
    LS_ASSIGN_OR_RETURN(channel_, TensorDesc::Nchw({channels_}, DType::kF32));
    return absl::OkStatus();
  }

  // The float32 (C) vector `index` of the workspace.
  float* Vector(void* workspace, int index) const {
    return reinterpret_cast<float*>(static_cast<char*>(workspace) +
                                    index * Aligned(channels_, sizeof(float)));
  }
  // A parameter (C) as float32: itself, or converted into workspace vector `index`.
  absl::StatusOr<const float*> FloatParam(const Tensor& param, void* workspace, int index,
                                          cudaStream_t stream) const {
    if (!half_params_) return cuda::DataAs<const float>(param);
    float* converted = Vector(workspace, index);
    CUDA_RETURN_IF_ERROR(
        cuda::LaunchCast(cuda::DataAs<const T>(param), converted, channels_, stream));
    return converted;
  }

  // The per-chunk sums of the channels-last kernels, after `vectors` workspace vectors.
  cuda::ChannelPartials Partials(void* workspace, int vectors) const {
    char* first = static_cast<char*>(workspace) + vectors * Aligned(channels_, sizeof(float));
    const int64_t chunks = cuda::ChannelChunks(elements_ / channels_, channels_);
    char* second = first + Aligned(chunks * channels_, sizeof(double));
    return {reinterpret_cast<double*>(first), reinterpret_cast<double*>(second), chunks};
  }
  // The channels-last kernels' workspace: `vectors` float32 (C) vectors, then the partial sums.
  size_t ChannelsLastWorkspace(int vectors) const {
    const int64_t chunks = cuda::ChannelChunks(elements_ / channels_, channels_);
    return vectors * Aligned(channels_, sizeof(float)) +
           2 * Aligned(chunks * channels_, sizeof(double));
  }

  int64_t channels_ = 0;
  int64_t elements_ = 0;
  double epsilon_ = 1e-5;
  bool half_params_ = false;
  TensorDesc x_, channel_;
};

// Whether batch norm of this node runs on the own channels-last kernels: 16-bit data in NHWC,
// or (N, C), which is the same in memory.
template <typename T>
bool OwnChannelsLast(const Node& node) {
  const Value& x = *node.inputs[0];
  return !std::is_same_v<T, float> && (x.layout == cuda::NhwcLayout() || x.shape().size() == 2);
}

// The running averages are updated in place: outputs 3 and 4 start from inputs 3 and 4.
absl::Status CopyRunningAverages(const KernelIO& io, cudaStream_t stream) {
  for (int i : {3, 4}) {
    if (io.outputs[i].raw_data() == io.inputs[i].raw_data()) continue;
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(io.outputs[i].raw_data(), io.inputs[i].raw_data(),
                                         io.inputs[i].nbytes(), cudaMemcpyDeviceToDevice, stream));
  }
  return absl::OkStatus();
}

// Training forward on the own channels-last kernels (batch_norm_kernels.h), same inputs and
// outputs as BatchNormKernel.
template <typename T>
class NhwcBatchNormKernel : public NormKernel<T> {
 public:
  static absl::StatusOr<std::unique_ptr<Kernel>> Create(const Node& node, bool relu) {
    auto kernel = std::unique_ptr<NhwcBatchNormKernel>(new NhwcBatchNormKernel());
    LS_RETURN_IF_ERROR(kernel->Init(node));
    kernel->momentum_ = static_cast<float>(node.attrs.GetFloat("momentum"));
    kernel->relu_ = relu;
    return kernel;
  }

  // scale, shift, float32 gamma and beta, then the partial sums.
  size_t WorkspaceBytes() const override { return this->ChannelsLastWorkspace(kVectors); }

  absl::Status Run(const KernelIO& io) override {
    const cudaStream_t stream = StreamOf(io);
    LS_RETURN_IF_ERROR(CopyRunningAverages(io, stream));
    LS_ASSIGN_OR_RETURN(const float* gamma,
                        this->FloatParam(io.inputs[1], io.workspace, 2, stream));
    LS_ASSIGN_OR_RETURN(const float* beta, this->FloatParam(io.inputs[2], io.workspace, 3, stream));
    const cuda::NormForwardVectors vectors{.gamma = gamma,
                                           .beta = beta,
                                           .saved_mean = io.outputs[1].data<float>(),
                                           .saved_var = io.outputs[2].data<float>(),
                                           .running_mean = io.outputs[3].data<float>(),
                                           .running_var = io.outputs[4].data<float>(),
                                           .scale = this->Vector(io.workspace, 0),
                                           .shift = this->Vector(io.workspace, 1)};
    CUDA_RETURN_IF_ERROR(cuda::LaunchNhwcBatchNorm(
        cuda::DataAs<const T>(io.inputs[0]), this->elements_ / this->channels_, this->channels_,
        momentum_, static_cast<float>(this->epsilon_), vectors,
        this->Partials(io.workspace, kVectors), cuda::DataAs<T>(io.outputs[0]),
        relu_ ? io.outputs[5].data<uint8_t>() : nullptr, stream));
    return absl::OkStatus();
  }

 private:
  static constexpr int kVectors = 4;
  NhwcBatchNormKernel() = default;
  float momentum_ = 0.9f;
  bool relu_ = false;
};

// Training backward on the own channels-last kernels, same inputs and outputs as
// BatchNormGradKernel.
template <typename T>
class NhwcBatchNormGradKernel : public NormKernel<T> {
 public:
  static absl::StatusOr<std::unique_ptr<Kernel>> Create(const Node& node, bool relu) {
    auto kernel = std::unique_ptr<NhwcBatchNormGradKernel>(new NhwcBatchNormGradKernel());
    LS_RETURN_IF_ERROR(kernel->Init(node));
    kernel->relu_ = relu;
    return kernel;
  }

  // inv_std, gamma * inv_std, the means of dy and dy * x_hat, float32 gamma, dgamma and dbeta,
  // then the partial sums.
  size_t WorkspaceBytes() const override { return this->ChannelsLastWorkspace(kVectors); }

  absl::Status Run(const KernelIO& io) override {
    const cudaStream_t stream = StreamOf(io);
    LS_ASSIGN_OR_RETURN(const float* gamma,
                        this->FloatParam(io.inputs[1], io.workspace, 4, stream));
    const bool half = this->half_params_;
    const cuda::NormBackwardVectors vectors{
        .gamma = gamma,
        .saved_mean = io.inputs[2].data<float>(),
        .saved_var = io.inputs[3].data<float>(),
        .dgamma = half ? this->Vector(io.workspace, 5) : io.outputs[1].data<float>(),
        .dbeta = half ? this->Vector(io.workspace, 6) : io.outputs[2].data<float>(),
        .inv_std = this->Vector(io.workspace, 0),
        .gamma_inv_std = this->Vector(io.workspace, 1),
        .mean_dy = this->Vector(io.workspace, 2),
        .mean_dy_x_hat = this->Vector(io.workspace, 3)};
    CUDA_RETURN_IF_ERROR(cuda::LaunchNhwcBatchNormGrad(
        cuda::DataAs<const T>(io.inputs[0]), cuda::DataAs<const T>(io.inputs[4]),
        relu_ ? io.inputs[5].data<uint8_t>() : nullptr, this->elements_ / this->channels_,
        this->channels_, static_cast<float>(this->epsilon_), vectors,
        this->Partials(io.workspace, kVectors), cuda::DataAs<T>(io.outputs[0]), stream));
    if (half) {
      for (int i : {1, 2}) {
        CUDA_RETURN_IF_ERROR(cuda::LaunchCast(this->Vector(io.workspace, i + 4),
                                              static_cast<T*>(io.outputs[i].raw_data()),
                                              this->channels_, stream));
      }
    }
    return absl::OkStatus();
  }

 private:
  static constexpr int kVectors = 7;
  NhwcBatchNormGradKernel() = default;
  bool relu_ = false;
};

// (x, gamma, beta, running_mean, running_var) -> (y, saved_mean, saved_var, running_mean',
// running_var'[, relu mask]).
template <typename T>
class BatchNormKernel : public NormKernel<T> {
 public:
  static absl::StatusOr<std::unique_ptr<Kernel>> Create(const Node& node, bool relu) {
    if (OwnChannelsLast<T>(node)) return NhwcBatchNormKernel<T>::Create(node, relu);
    auto kernel = std::unique_ptr<BatchNormKernel>(new BatchNormKernel());
    LS_RETURN_IF_ERROR(kernel->Init(node));
    kernel->factor_ = 1.0 - node.attrs.GetFloat("momentum");
    kernel->relu_ = relu;
    return kernel;
  }

  // inv_std, then float32 gamma and beta where they are 16-bit.
  size_t WorkspaceBytes() const override {
    return (this->half_params_ ? 3 : 1) * Aligned(this->channels_, sizeof(float));
  }

  absl::Status Run(const KernelIO& io) override {
    const cudaStream_t stream = StreamOf(io);
    LS_ASSIGN_OR_RETURN(cudnnHandle_t handle, cuda::CudnnHandle(stream));
    LS_RETURN_IF_ERROR(CopyRunningAverages(io, stream));
    float* inv_std = this->Vector(io.workspace, 0);  // (C)
    LS_ASSIGN_OR_RETURN(const float* gamma,
                        this->FloatParam(io.inputs[1], io.workspace, 1, stream));
    LS_ASSIGN_OR_RETURN(const float* beta, this->FloatParam(io.inputs[2], io.workspace, 2, stream));
    T* y = cuda::DataAs<T>(io.outputs[0]);  // (N, C, ...)
    CUDNN_RETURN_IF_ERROR(cudnnBatchNormalizationForwardTraining(
        handle, kTrainingMode, &kOne, &kZero, this->x_.get(), io.inputs[0].raw_data(),
        this->x_.get(), y, this->channel_.get(), gamma, beta,         // gamma, beta (C)
        factor_, io.outputs[3].raw_data(), io.outputs[4].raw_data(),  // running (C)
        this->epsilon_, io.outputs[1].raw_data(), inv_std));          // saved mean (C)
    CUDA_RETURN_IF_ERROR(cuda::LaunchVarianceFromInvStd(inv_std, static_cast<float>(this->epsilon_),
                                                        this->channels_,
                                                        io.outputs[2].data<float>(), stream));
    if (relu_) {
      CUDA_RETURN_IF_ERROR(
          cuda::LaunchReluWithMask(y, io.outputs[5].data<uint8_t>(), this->elements_, stream));
    }
    return absl::OkStatus();
  }

 private:
  BatchNormKernel() = default;
  double factor_ = 0.1;
  bool relu_ = false;
};

// (x, gamma, saved_mean, saved_var, dy[, relu mask]) -> (dx, dgamma, dbeta).
template <typename T>
class BatchNormGradKernel : public NormKernel<T> {
 public:
  static absl::StatusOr<std::unique_ptr<Kernel>> Create(const Node& node, bool relu) {
    if (OwnChannelsLast<T>(node)) return NhwcBatchNormGradKernel<T>::Create(node, relu);
    auto kernel = std::unique_ptr<BatchNormGradKernel>(new BatchNormGradKernel());
    LS_RETURN_IF_ERROR(kernel->Init(node));
    kernel->relu_ = relu;
    return kernel;
  }

  // inv_std, float32 gamma, dgamma and dbeta where they are 16-bit, then the masked dy of the
  // fused ReLU.
  size_t WorkspaceBytes() const override {
    return MaskedOffset() + (relu_ ? Aligned(this->elements_, sizeof(T)) : 0);
  }

  absl::Status Run(const KernelIO& io) override {
    const cudaStream_t stream = StreamOf(io);
    LS_ASSIGN_OR_RETURN(cudnnHandle_t handle, cuda::CudnnHandle(stream));
    float* inv_std = this->Vector(io.workspace, 0);  // (C)
    CUDA_RETURN_IF_ERROR(cuda::LaunchInvStdFromVariance(io.inputs[3].data<float>(),
                                                        static_cast<float>(this->epsilon_),
                                                        this->channels_, inv_std, stream));
    LS_ASSIGN_OR_RETURN(const float* gamma,
                        this->FloatParam(io.inputs[1], io.workspace, 1, stream));
    const bool half = this->half_params_;
    void* dgamma = half ? this->Vector(io.workspace, 2) : io.outputs[1].raw_data();  // (C)
    void* dbeta = half ? this->Vector(io.workspace, 3) : io.outputs[2].raw_data();   // (C)
    const void* dy = io.inputs[4].raw_data();                                        // (N, C, ...)
    if (relu_) {
      auto* masked = reinterpret_cast<T*>(static_cast<char*>(io.workspace) + MaskedOffset());
      CUDA_RETURN_IF_ERROR(cuda::LaunchApplyMask(static_cast<const T*>(dy),
                                                 io.inputs[5].data<uint8_t>(), this->elements_,
                                                 masked, stream));
      dy = masked;
    }
    CUDNN_RETURN_IF_ERROR(cudnnBatchNormalizationBackward(
        handle, kTrainingMode, &kOne, &kZero, &kOne, &kZero, this->x_.get(),
        io.inputs[0].raw_data(), this->x_.get(), dy, this->x_.get(), io.outputs[0].raw_data(),
        this->channel_.get(), gamma, dgamma, dbeta,          // (C)
        this->epsilon_, io.inputs[2].raw_data(), inv_std));  // saved mean (C)
    if (half) {
      for (int i : {1, 2}) {
        CUDA_RETURN_IF_ERROR(cuda::LaunchCast(this->Vector(io.workspace, i + 1),
                                              static_cast<T*>(io.outputs[i].raw_data()),
                                              this->channels_, stream));
      }
    }
    return absl::OkStatus();
  }

 private:
  BatchNormGradKernel() = default;
  size_t MaskedOffset() const {
    return (this->half_params_ ? 4 : 1) * Aligned(this->channels_, sizeof(float));
  }
  bool relu_ = false;
};

// (x, gamma, beta, mean, var) -> y with the given statistics.
template <typename T>
class BatchNormInferenceKernel : public NormKernel<T> {
 public:
  static absl::StatusOr<std::unique_ptr<Kernel>> Create(const Node& node) {
    auto kernel = std::unique_ptr<BatchNormInferenceKernel>(new BatchNormInferenceKernel());
    LS_RETURN_IF_ERROR(kernel->Init(node));
    return kernel;
  }

  // float32 gamma and beta where they are 16-bit.
  size_t WorkspaceBytes() const override {
    return this->half_params_ ? 3 * Aligned(this->channels_, sizeof(float)) : 0;
  }

  absl::Status Run(const KernelIO& io) override {
    const cudaStream_t stream = StreamOf(io);
    LS_ASSIGN_OR_RETURN(cudnnHandle_t handle, cuda::CudnnHandle(stream));
    LS_ASSIGN_OR_RETURN(const float* gamma,
                        this->FloatParam(io.inputs[1], io.workspace, 1, stream));
    LS_ASSIGN_OR_RETURN(const float* beta, this->FloatParam(io.inputs[2], io.workspace, 2, stream));
    CUDNN_RETURN_IF_ERROR(cudnnBatchNormalizationForwardInference(
        handle, kInferenceMode, &kOne, &kZero, this->x_.get(), io.inputs[0].raw_data(),
        this->x_.get(), io.outputs[0].raw_data(), this->channel_.get(), gamma, beta,
        io.inputs[3].raw_data(), io.inputs[4].raw_data(), this->epsilon_));
    return absl::OkStatus();
  }

 private:
  BatchNormInferenceKernel() = default;
};

// Every batch-norm op takes NHWC where the data can have it (16-bit, 4-D).
KernelDef Norm(const char* op) {
  return {.op = op, .device = DeviceType::kCUDA, .layouts = cuda::NhwcWhereEligible};
}

[[maybe_unused]] const bool kRegistered[] = {
    RegisterFloatKernels<BatchNormKernel, DeviceFloats>(Norm("BatchNorm"), false),
    RegisterFloatKernels<BatchNormKernel, DeviceFloats>(Norm("BatchNormRelu"), true),
    RegisterFloatKernels<BatchNormGradKernel, DeviceFloats>(Norm("BatchNormGrad"), false),
    RegisterFloatKernels<BatchNormGradKernel, DeviceFloats>(Norm("BatchNormReluGrad"), true),
    RegisterFloatKernels<BatchNormInferenceKernel, DeviceFloats>(Norm("BatchNormInference")),
};

}  // namespace
}  // namespace lockstep
