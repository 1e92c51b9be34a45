// The CPU kernels of the element-wise ops: the pointwise ones are ops/cpu/pointwise.h's over the
// functors of ops/elementwise_math.h, BiasAdd's the shared kernel of ops/bias_add_kernel.h over
// the loops here; Fill and Cast, which do not map inputs to an output element by element, have
// their own.

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/half.h"
#include "graph/kernel.h"
#include "ops/bias_add_kernel.h"
#include "ops/cpu/convert_floats.h"
#include "ops/cpu/cpu_layouts.h"
#include "ops/cpu/pointwise.h"
#include "ops/cpu/vector_loop.h"
#include "ops/elementwise_math.h"
#include "ops/kernel_shapes.h"
#include "ops/pointwise_kernel.h"

namespace lockstep {
namespace {

using cpu::ParallelFor;

// The kernels below are templated on the element type T (float, BFloat16, Float16) and compute in
// float32, as the element-wise ones of ops/cpu/pointwise.h.

// A fill rounds its value once: a std::fill, not a per-element functor.
template <typename T>
class FillKernel : public Kernel {
 public:
  explicit FillKernel(const Node& node)
      : value_(FloatTo<T>(static_cast<float>(node.attrs.GetFloat("value")))) {}
  absl::Status Run(const KernelIO& io) override {
    T* y = io.outputs[0].data<T>();  // attr shape
    std::fill(y, y + io.outputs[0].numel(), value_);
    return absl::OkStatus();
  }

 private:
  T value_;
};

// Casts from float32, float64 or the integers, element by element.
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

// Between float32, bf16 and f16 (either way), in any layout: see ops/cpu/convert_floats.h.
bool CastsFloats(const Node& node) {
  return IsFloat(node.inputs[0]->dtype()) && IsFloat(node.output()->dtype());
}

class CastFloatsKernel : public Kernel {
 public:
  explicit CastFloatsKernel(const Node&) {}
  absl::Status Run(const KernelIO& io) override {
    const Tensor& x = io.inputs[0];   // any shape and layout, one dtype
    const Tensor& y = io.outputs[0];  // the same, the other dtype
    cpu::ConvertFloats(x.raw_data(), x.dtype(), y.raw_data(), y.dtype(), x.numel());
    return absl::OkStatus();
  }
};

template <typename From>
absl::StatusOr<std::unique_ptr<Kernel>> CreateCast(const Node& node, const KernelContext& ctx) {
  if (CastsFloats(node)) return std::make_unique<CastFloatsKernel>(node);
  if constexpr (std::is_arithmetic_v<From>) return MakeFactory<CastKernel<From>>()(node, ctx);
  return absl::UnimplementedError(absl::StrCat("no CPU Cast from ", DTypeName(DTypeOf<From>()),
                                               " to ", DTypeName(node.output()->dtype()),
                                               ": cast through f32"));
}

// Casts between floats keep the input's layout (blocked activations stay blocked); the others
// are plain. A 4-D parameter's copy (the AMP pass casts convolution weights every step) takes the
// weight layout the convolutions read, and so does the parameter it is stored from: else the
// parameter would stay plain and every step reorder its copy.
LayoutChoice CastLayouts(const Node& node, const std::vector<Layout>& producer_layouts,
                         const SharedLayouts& shared) {
  if (!CastsFloats(node)) return PlainLayouts(node, producer_layouts, shared);
  const Value& x = *node.inputs[0];
  if (x.producer->IsInput() && x.producer->role() == InputRole::kParameter &&
      x.shape().size() == 4) {
    const Layout layout = WeightLayoutIfEligible(x, shared);
    return {{layout}, {layout}};
  }
  return SameLayoutAsFirstInput(node, producer_layouts, shared);
}

// BiasAdd's loops (ops/bias_add_kernel.h): in float, the gradient summed in double.
struct BiasAddLoops {
  template <typename T>
  static absl::Status BiasAdd(const T* x, const T* bias, T* y, const ChannelGeometry& g,
                              const KernelIO&) {
    ParallelFor(g.outer * g.channels, [&](int64_t nc) {
      const float b = ToFloat(bias[nc % g.channels]);
      for (int64_t i = 0; i < g.inner; ++i)
        y[nc * g.inner + i] = FloatTo<T>(ToFloat(x[nc * g.inner + i]) + b);
    });
    return absl::OkStatus();
  }

  template <typename T>
  static absl::Status BiasAddGrad(const T* dy, T* dbias, const ChannelGeometry& g,
                                  const KernelIO&) {
    ParallelFor(g.channels, [&](int64_t c) {
      double sum = 0.0;
      for (int64_t n = 0; n < g.outer; ++n) {
        const T* row = dy + (n * g.channels + c) * g.inner;
        for (int64_t i = 0; i < g.inner; ++i) sum += ToFloat(row[i]);
      }
      dbias[c] = FloatTo<T>(static_cast<float>(sum));
    });
    return absl::OkStatus();
  }
};

[[maybe_unused]] const bool kRegistered[] = {
    cpu::RegisterPointwise<math::AddOp>("Add"),
    cpu::RegisterPointwise<math::AddReluOp>("AddRelu"),
    cpu::RegisterPointwise<math::AddReluGradOp>("AddReluGrad"),
    cpu::RegisterPointwise<math::ReluOp>("Relu"),
    cpu::RegisterPointwise<math::ReluGradOp>("ReluGrad"),
    cpu::RegisterPointwise<math::ScaleOp>("Scale", ScaleOf),
    RegisterFloatKernels<FillKernel, HostFloats>({.op = "Fill"}),
    RegisterBiasAddOn<BiasAddLoops, HostFloats>(DeviceType::kCPU),
};

REGISTER_KERNEL({.op = "Cast", .create = CreateCast<float>, .layouts = CastLayouts});
REGISTER_KERNEL(
    {.op = "Cast", .dtype = DType::kBF16, .create = CreateCast<BFloat16>, .layouts = CastLayouts});
REGISTER_KERNEL(
    {.op = "Cast", .dtype = DType::kF16, .create = CreateCast<Float16>, .layouts = CastLayouts});
REGISTER_KERNEL({.op = "Cast", .dtype = DType::kF64, .create = MakeFactory<CastKernel<double>>()});
REGISTER_KERNEL({.op = "Cast", .dtype = DType::kI32, .create = MakeFactory<CastKernel<int32_t>>()});
REGISTER_KERNEL({.op = "Cast", .dtype = DType::kI64, .create = MakeFactory<CastKernel<int64_t>>()});

}  // namespace
}  // namespace lockstep
