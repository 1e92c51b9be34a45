// Conv2D and its two backprops on CUDA through cuDNN. Descriptors and the algorithm are chosen
// once, when the kernel is built: the fastest deterministic algorithm cuDNN's heuristics offer
// within kMaxWorkspace (deterministic, so runs and resumes repeat bit for bit, as on the CPU).
// The forward convolution of an image's first layer in 16 bits goes through cuDNN's graph API
// (cudnn_graph.h), whose heuristics reach the first-layer kernels the legacy API does not.
// Its workspace comes from the executor's planned workspace, never from an allocation in a step.
// bf16 and f16 convolutions read NHWC activations and KRSC weights and accumulate in float32 on
// tensor cores (CUDNN_TENSOR_OP_MATH), as PyTorch's channels-last autocast does; float32 stays
// NCHW with TF32 where allowed.

#include <algorithm>
#include <array>
#include <optional>
#include <string>

#include "graph/kernel.h"
#include "ops/conv_layouts.h"
#include "ops/cuda/cuda_layouts.h"
#include "ops/cuda/cudnn_cublas.h"
#include "ops/cuda/cudnn_desc.h"
#include "ops/cuda/cudnn_graph.h"

namespace lockstep {
namespace {

using cuda::ConvDesc;
using cuda::FilterDesc;
using cuda::TensorDesc;

constexpr size_t kMaxWorkspace = size_t{256} << 20;
constexpr int kMaxAlgorithms = 16;

enum class Direction { kForward, kBackwardData, kBackwardFilter };

// The forward convolution's x (N, C, H, W), w (O, C / groups, KH, KW) and y (N, O, OH, OW),
// whichever of them the node reads and which it writes.
struct ConvValues {
  const Value *x, *w, *y;
};

ConvValues ValuesOf(const Node& node, Direction direction) {
  switch (direction) {
    case Direction::kForward:  // (x, w) -> y
      return {node.inputs[0], node.inputs[1], node.output()};
    case Direction::kBackwardData:  // (dy, w) -> dx
      return {node.output(), node.inputs[1], node.inputs[0]};
    case Direction::kBackwardFilter:  // (x, dy) -> dw
      return {node.inputs[0], node.output(), node.inputs[1]};
  }
  return {};
}

bool IsNhwc(const Value& value) { return value.layout == cuda::NhwcLayout(); }

// 16-bit weights in KRSC where the job shares NHWC for values every rank holds alike (at O3 the
// weights are parameters), else plain.
Layout WeightLayout(const Value& w, const SharedLayouts& shared) {
  if (!cuda::NhwcEligible(w.shape(), w.dtype())) return Layout::kPlain;
  return shared.Pick({cuda::NhwcLayout()});
}

// 16-bit activations NHWC and weights KRSC, the layouts cuDNN's tensor-core kernels read without
// transposing; float32 plain.
template <int kWeightsInput>
LayoutChoice ConvLayouts(const Node& node, const std::vector<Layout>&,
                         const SharedLayouts& shared) {
  return ConvolutionLayouts(
      node, kWeightsInput, [&](const Value& w) { return WeightLayout(w, shared); },
      cuda::NhwcIfEligible);
}

// The first (fastest by cuDNN's heuristics) deterministic algorithm within the workspace cap;
// with `deterministic` off (MathOptions), the first within the cap. Some shapes have no
// deterministic one (backward data of a strided 1x1 convolution, ResNet-50's downsample): then
// the fastest one within the cap, whose atomics may sum in another order each run.
// Heuristics rather than timing (cuDNN's Find, PyTorch's cudnn.benchmark): timing can choose
// differently in two processes, so their results would differ in the last bits, and on an H100
// it made ResNet-50's convolutions no faster (BENCHMARKS.md).
template <typename Perf>
absl::StatusOr<Perf> Choose(const std::array<Perf, kMaxAlgorithms>& perfs, int returned,
                            const std::string& name, bool deterministic) {
  const Perf* fastest = nullptr;
  for (int i = 0; i < returned; ++i) {
    if (perfs[i].status != CUDNN_STATUS_SUCCESS || perfs[i].memory > kMaxWorkspace) continue;
    if (!deterministic || perfs[i].determinism == CUDNN_DETERMINISTIC) return perfs[i];
    if (fastest == nullptr) fastest = &perfs[i];
  }
  if (fastest == nullptr) {
    return absl::UnimplementedError(absl::StrCat("cuDNN's heuristics offer no algorithm within ",
                                                 kMaxWorkspace >> 20, " MiB of workspace (of ",
                                                 returned, " ranked)"));
  }
  LS_LOG(Warning) << name << ": no deterministic cuDNN algorithm, using algorithm "
                  << static_cast<int>(fastest->algo)
                  << " (results may differ in the last bits from run to run)";
  return *fastest;
}

class ConvKernel : public Kernel {
 public:
  static absl::StatusOr<std::unique_ptr<Kernel>> Create(const Node& node, Direction direction,
                                                        const KernelContext& ctx) {
    auto kernel = std::unique_ptr<ConvKernel>(
        new ConvKernel(direction, node.Describe(), cuda::Deterministic(ctx)));
    LS_RETURN_IF_ERROR(kernel->Build(node, cuda::AllowTf32(ctx)));
    return kernel;
  }

  size_t WorkspaceBytes() const override { return workspace_; }

  absl::Status Run(const KernelIO& io) override { return Launch(io); }

 private:
  ConvKernel(Direction direction, std::string name, bool deterministic)
      : direction_(direction), name_(std::move(name)), deterministic_(deterministic) {}

  // Descriptors from the node's shapes and attributes, checked against cuDNN's idea of the
  // output, then the algorithm.
  absl::Status Build(const Node& node, bool allow_tf32) {
    const DType dtype = node.output()->dtype();
    const ConvValues values = ValuesOf(node, direction_);
    const Shape& x_shape = values.x->shape();  // (N, C, H, W)
    const Shape& y_shape = values.y->shape();  // (N, O, OH, OW)
    LS_ASSIGN_OR_RETURN(auto x, cuda::ActivationFields(x_shape, dtype, IsNhwc(*values.x)));
    LS_ASSIGN_OR_RETURN(x_, TensorDesc::Create(x));
    LS_ASSIGN_OR_RETURN(auto y, cuda::ActivationFields(y_shape, dtype, IsNhwc(*values.y)));
    LS_ASSIGN_OR_RETURN(y_, TensorDesc::Create(y));
    LS_ASSIGN_OR_RETURN(cuda::FilterDescFields filter,
                        cuda::FilterFields(values.w->shape(), dtype, IsNhwc(*values.w)));
    LS_ASSIGN_OR_RETURN(w_, FilterDesc::Create(filter));  // (O, C / groups, KH, KW)
    LS_ASSIGN_OR_RETURN(cuda::ConvDescFields conv, cuda::ConvFields(node.attrs, dtype));
    if (!allow_tf32 && conv.math == CUDNN_DEFAULT_MATH) conv.math = CUDNN_FMA_MATH;
    LS_ASSIGN_OR_RETURN(conv_, ConvDesc::Create(conv));
    LS_ASSIGN_OR_RETURN(auto dims, cuda::ConvForwardOutputDims(conv_, x_, w_));
    const Shape computed(dims.begin(), dims.end());  // (N, O, OH, OW)
    if (computed != y_shape) {
      return absl::InternalError(absl::StrCat("cuDNN computes y ", ShapeToString(computed),
                                              ", the graph ", ShapeToString(y_shape)));
    }
    LS_ASSIGN_OR_RETURN(cudnnHandle_t handle, cuda::CudnnHandle(nullptr));
    switch (direction_) {
      case Direction::kForward:
        if (cuda::ConvForwardUsesGraph(x, IsNhwc(*values.x), conv)) {
          return PlanForward(handle, x, filter, y, conv);
        }
        return ChooseForward(handle);
      case Direction::kBackwardData:
        return ChooseBackwardData(handle);
      case Direction::kBackwardFilter:
        return ChooseBackwardFilter(handle);
    }
    return absl::OkStatus();
  }

  // Each Choose* ranks by heuristics, sets the chosen algorithm's math type (TF32 tensor ops or
  // FMA) on the descriptor, as cuDNN wants the pair, and sizes the workspace under that math.
  absl::Status ChooseForward(cudnnHandle_t handle) {
    std::array<cudnnConvolutionFwdAlgoPerf_t, kMaxAlgorithms> perfs;
    int returned = 0;
    CUDNN_RETURN_IF_ERROR(
        cudnnGetConvolutionForwardAlgorithm_v7(handle, x_.get(), w_.get(), conv_.get(), y_.get(),
                                               kMaxAlgorithms, &returned, perfs.data()));
    LS_ASSIGN_OR_RETURN(auto perf, Choose(perfs, returned, name_, deterministic_));
    forward_ = perf.algo;
    CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionMathType(conv_.get(), perf.mathType));
    CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionForwardWorkspaceSize(
        handle, x_.get(), w_.get(), conv_.get(), y_.get(), forward_, &workspace_));
    workspace_ = std::max(workspace_, perf.memory);
    return absl::OkStatus();
  }

  // The forward through the graph API: its heuristics' first plan within the cap (deterministic
  // unless MathOptions::deterministic is off).
  absl::Status PlanForward(cudnnHandle_t handle, const cuda::TensorDescFields& x,
                           const cuda::FilterDescFields& w, const cuda::TensorDescFields& y,
                           const cuda::ConvDescFields& conv) {
    LS_ASSIGN_OR_RETURN(auto plan, cuda::ConvForwardPlan::Create(
                                       handle, cuda::GraphTensor(x), cuda::GraphTensor(w),
                                       cuda::GraphTensor(y), conv, kMaxWorkspace, deterministic_));
    workspace_ = plan.workspace_bytes();
    forward_plan_.emplace(std::move(plan));
    return absl::OkStatus();
  }

  absl::Status ChooseBackwardData(cudnnHandle_t handle) {
    std::array<cudnnConvolutionBwdDataAlgoPerf_t, kMaxAlgorithms> perfs;
    int returned = 0;
    CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionBackwardDataAlgorithm_v7(
        handle, w_.get(), y_.get(), conv_.get(), x_.get(), kMaxAlgorithms, &returned,
        perfs.data()));
    LS_ASSIGN_OR_RETURN(auto perf, Choose(perfs, returned, name_, deterministic_));
    backward_data_ = perf.algo;
    CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionMathType(conv_.get(), perf.mathType));
    CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionBackwardDataWorkspaceSize(
        handle, w_.get(), y_.get(), conv_.get(), x_.get(), backward_data_, &workspace_));
    workspace_ = std::max(workspace_, perf.memory);
    return absl::OkStatus();
  }

  absl::Status ChooseBackwardFilter(cudnnHandle_t handle) {
    std::array<cudnnConvolutionBwdFilterAlgoPerf_t, kMaxAlgorithms> perfs;
    int returned = 0;
    CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
        handle, x_.get(), y_.get(), conv_.get(), w_.get(), kMaxAlgorithms, &returned,
        perfs.data()));
    LS_ASSIGN_OR_RETURN(auto perf, Choose(perfs, returned, name_, deterministic_));
    backward_filter_ = perf.algo;
    CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionMathType(conv_.get(), perf.mathType));
    CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionBackwardFilterWorkspaceSize(
        handle, x_.get(), y_.get(), conv_.get(), w_.get(), backward_filter_, &workspace_));
    workspace_ = std::max(workspace_, perf.memory);
    return absl::OkStatus();
  }

  absl::Status Launch(const KernelIO& io) {
    LS_ASSIGN_OR_RETURN(cudnnHandle_t handle, cuda::CudnnHandle(cuda::StreamOf(io)));
    const float one = 1.0f, zero = 0.0f;  // y = conv(...), overwriting what was there
    const void* in0 = io.inputs[0].raw_data();
    const void* in1 = io.inputs[1].raw_data();
    void* out = io.outputs[0].raw_data();
    switch (direction_) {
      case Direction::kForward:  // x (N, C, H, W), w (O, C/g, KH, KW) -> y (N, O, OH, OW)
        if (forward_plan_.has_value()) {
          return forward_plan_->Run(handle, in0, in1, out, io.workspace);
        }
        CUDNN_RETURN_IF_ERROR(cudnnConvolutionForward(handle, &one, x_.get(), in0, w_.get(), in1,
                                                      conv_.get(), forward_, io.workspace,
                                                      workspace_, &zero, y_.get(), out));
        break;
      case Direction::kBackwardData:  // dy (N, O, OH, OW), w (O, C/g, KH, KW) -> dx (N, C, H, W)
        CUDNN_RETURN_IF_ERROR(cudnnConvolutionBackwardData(
            handle, &one, w_.get(), in1, y_.get(), in0, conv_.get(), backward_data_, io.workspace,
            workspace_, &zero, x_.get(), out));
        break;
      case Direction::kBackwardFilter:  // x (N, C, H, W), dy (N, O, OH, OW) -> dw (O, C/g, KH, KW)
        CUDNN_RETURN_IF_ERROR(cudnnConvolutionBackwardFilter(
            handle, &one, x_.get(), in0, y_.get(), in1, conv_.get(), backward_filter_, io.workspace,
            workspace_, &zero, w_.get(), out));
        break;
    }
    return absl::OkStatus();
  }

  Direction direction_;
  std::string name_;    // "Conv2D node 'layer1/conv_3' (#3)", for the warning above
  bool deterministic_;  // MathOptions::deterministic
  TensorDesc x_, y_;
  FilterDesc w_;
  ConvDesc conv_;
  std::optional<cuda::ConvForwardPlan> forward_plan_;  // set where the graph API runs the forward
  cudnnConvolutionFwdAlgo_t forward_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnConvolutionBwdDataAlgo_t backward_data_ = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
  cudnnConvolutionBwdFilterAlgo_t backward_filter_ = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
  size_t workspace_ = 0;
};

KernelFactory ConvFactory(Direction direction) {
  return [direction](const Node& node, const KernelContext& ctx) {
    return ConvKernel::Create(node, direction, ctx);
  };
}

// Each op for float32 and the 16-bit types: one kernel, the dtype picks the descriptors.
[[maybe_unused]] const bool kRegistered[] = {
    RegisterFloatKernels({.op = "Conv2D",
                          .device = DeviceType::kCUDA,
                          .create = ConvFactory(Direction::kForward),
                          .layouts = ConvLayouts<1>}),
    RegisterFloatKernels({.op = "Conv2DBackpropInput",
                          .device = DeviceType::kCUDA,
                          .create = ConvFactory(Direction::kBackwardData),
                          .layouts = ConvLayouts<1>}),
    RegisterFloatKernels({.op = "Conv2DBackpropFilter",
                          .device = DeviceType::kCUDA,
                          .create = ConvFactory(Direction::kBackwardFilter),
                          .layouts = ConvLayouts<kConvWeightsOut>}),
};

}  // namespace
}  // namespace lockstep
