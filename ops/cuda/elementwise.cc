// CUDA kernels of the element-wise ops: the Kernel classes, whose Run queues a launcher of
// ops/cuda/elementwise.cu on the device's compute stream; the pointwise ops share the kernel of
// ops/pointwise_kernel.h over their functors (ops/elementwise_math.h), BiasAdd and its gradient
// that of ops/bias_add_kernel.h. Each is a template on the element type (float, __half,
// __nv_bfloat16), registered for f32, bf16 and f16. The element-wise ops keep their first input's
// layout (NHWC activations stay NHWC); BiasAdd and its gradient, which index channels, want
// plain; Cast converts the layout as it converts the dtype (CastLayouts).

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "graph/kernel.h"
#include "ops/bias_add_kernel.h"
#include "ops/cuda/cuda_layouts.h"
#include "ops/cuda/cudnn_cublas.h"
#include "ops/cuda/device_floats.h"
#include "ops/cuda/elementwise_kernels.h"
#include "ops/cuda/reorder_kernels.h"
#include "ops/elementwise_math.h"
#include "ops/kernel_shapes.h"
#include "ops/pointwise_kernel.h"

namespace lockstep {
namespace {

using cuda::DataAs;
using cuda::DeviceFloats;
using cuda::StreamOf;

constexpr DeviceType kCUDA = DeviceType::kCUDA;

// The CUDA loop of PointwiseKernel (ops/pointwise_kernel.h): the launcher of
// ops/cuda/pointwise.cuh, instantiated in elementwise.cu, on the compute stream.
struct PointwiseLoop {
  template <typename T, typename Op, size_t kInputs>
  static absl::Status Run(Op op, const std::array<const T*, kInputs>& x,  // any shape
                          T* y, int64_t n, const KernelIO& io) {          // x's shape
    CUDA_RETURN_IF_ERROR(cuda::LaunchPointwise(op, x, y, n, StreamOf(io)));
    return absl::OkStatus();
  }
};

// Registers Op's kernel for `op` in f32, bf16 and f16; `op_of` builds a functor with state from
// the node.
template <typename Op, typename... OpOf>
bool RegisterPointwise(const char* op, OpOf... op_of) {
  return RegisterPointwiseOn<PointwiseLoop, DeviceFloats, Op>(kCUDA, op, op_of...);
}

template <typename T>
class FillKernel : public Kernel {
 public:
  explicit FillKernel(const Node& node)
      : value_(static_cast<float>(node.attrs.GetFloat("value"))) {}
  absl::Status Run(const KernelIO& io) override {
    CUDA_RETURN_IF_ERROR(cuda::LaunchFill(DataAs<T>(io.outputs[0]), value_,  // attr shape
                                          io.outputs[0].numel(), StreamOf(io)));
    return absl::OkStatus();
  }

 private:
  float value_;
};

// Between float types, Cast takes its input in the layout it comes in and gives its output NHWC
// where eligible, permuting as it converts: a float32 image or weight cast to 16 bits goes to its
// convolution, and a 16-bit weight gradient back to float32, without a Reorder beside the Cast
// (one kernel per weight and step, and the image read once). Other dtypes are plain.
LayoutChoice CastLayouts(const Node& node, const std::vector<Layout>& producer_layouts,
                         const SharedLayouts&) {
  if (!IsFloat(node.inputs[0]->dtype()) || !IsFloat(node.output()->dtype())) {
    return {{Layout::kPlain}, {Layout::kPlain}};
  }
  const Layout nhwc = cuda::NhwcLayout();
  return {{producer_layouts[0] == nhwc ? nhwc : Layout::kPlain},
          {cuda::NhwcIfEligible(*node.output())}};
}

template <typename T>
inline constexpr bool kFloatElement =
    std::is_same_v<T, float> || std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

template <typename From>
class CastKernel : public Kernel {
 public:
  explicit CastKernel(const Node& node)
      : permute_(node.inputs[0]->layout != node.output()->layout),
        to_nhwc_(node.output()->layout == cuda::NhwcLayout()) {
    if (permute_) {
      const Shape& shape = node.output()->shape();
      dims_ = {shape[0], shape[1], shape[2], shape[3]};
    }
  }
  absl::Status Run(const KernelIO& io) override {
    const From* x = DataAs<const From>(io.inputs[0]);  // any shape
    const Tensor& y = io.outputs[0];                   // same shape
    if constexpr (kFloatElement<From>) {
      if (permute_) return ConvertLayout(x, y, StreamOf(io));
    }
    switch (y.dtype()) {
      case DType::kF32:
        return Convert(x, DataAs<float>(y), y.numel(), StreamOf(io));
      case DType::kF64:
        return Convert(x, DataAs<double>(y), y.numel(), StreamOf(io));
      case DType::kI32:
        return Convert(x, DataAs<int32_t>(y), y.numel(), StreamOf(io));
      case DType::kI64:
        return Convert(x, DataAs<int64_t>(y), y.numel(), StreamOf(io));
      case DType::kBF16:
        return Convert(x, DataAs<__nv_bfloat16>(y), y.numel(), StreamOf(io));
      case DType::kF16:
        return Convert(x, DataAs<__half>(y), y.numel(), StreamOf(io));
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

  // Between plain and NHWC storage of a 4-D value, float types alone (CastLayouts).
  absl::Status ConvertLayout(const From* x, const Tensor& y, cudaStream_t stream) const {
    switch (y.dtype()) {
      case DType::kF32:
        return Permute(x, DataAs<float>(y), stream);
      case DType::kBF16:
        return Permute(x, DataAs<__nv_bfloat16>(y), stream);
      case DType::kF16:
        return Permute(x, DataAs<__half>(y), stream);
      default:
        return absl::InternalError(
            absl::StrCat("Cast to ", DTypeName(y.dtype()), " cannot change the layout"));
    }
  }
  template <typename To>
  absl::Status Permute(const From* x, To* y, cudaStream_t stream) const {
    CUDA_RETURN_IF_ERROR(cuda::LaunchCastNhwcPermute(x, y, dims_, to_nhwc_, stream));
    return absl::OkStatus();
  }

  bool permute_;  // the input's layout differs from the output's
  bool to_nhwc_;
  std::array<int64_t, 4> dims_{};  // (N, C, H, W) where permute_
};

// BiasAdd's loops (ops/bias_add_kernel.h): the launchers of elementwise.cu on the compute stream.
struct BiasAddLoops {
  template <typename T>
  static absl::Status BiasAdd(const T* x, const T* bias, T* y, const ChannelGeometry& g,
                              const KernelIO& io) {
    CUDA_RETURN_IF_ERROR(
        cuda::LaunchBiasAdd(x, bias, y, g.outer, g.channels, g.inner, StreamOf(io)));
    return absl::OkStatus();
  }

  template <typename T>
  static absl::Status BiasAddGrad(const T* dy, T* dbias, const ChannelGeometry& g,
                                  const KernelIO& io) {
    CUDA_RETURN_IF_ERROR(
        cuda::LaunchBiasAddGrad(dy, dbias, g.outer, g.channels, g.inner, StreamOf(io)));
    return absl::OkStatus();
  }
};

[[maybe_unused]] const bool kRegistered[] = {
    RegisterPointwise<math::AddOp>("Add"),
    RegisterPointwise<math::AddReluOp>("AddRelu"),
    RegisterPointwise<math::AddReluGradOp>("AddReluGrad"),
    RegisterPointwise<math::ReluOp>("Relu"),
    RegisterPointwise<math::ReluGradOp>("ReluGrad"),
    RegisterPointwise<math::ScaleOp>("Scale", ScaleOf),
    RegisterFloatKernels<FillKernel, DeviceFloats>({.op = "Fill", .device = kCUDA}),
    RegisterBiasAddOn<BiasAddLoops, DeviceFloats>(kCUDA),
    RegisterFloatKernels<CastKernel, DeviceFloats>(
        {.op = "Cast", .device = kCUDA, .layouts = CastLayouts}),
};

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

}  // namespace
}  // namespace lockstep
