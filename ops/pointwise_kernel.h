#pragma once

// The element-wise kernel of every backend, over the functors of ops/elementwise_math.h: the
// Kernel holds the functor and hands it, the inputs and the output to its backend's loop
// (ops/cpu/pointwise.h, ops/cuda/elementwise.cc over ops/cuda/pointwise.cuh). A backend's loop
// is a struct with
//   template <typename T, typename Op, size_t kInputs>
//   static absl::Status Run(Op op, const std::array<const T*, kInputs>& x, T* y, int64_t n,
//                           const KernelIO& io);
// computing y[i] = op(x[0][i], x[1][i], ...) in float for i < n, T the backend's element type.

#include <array>
#include <cstddef>

#include "graph/kernel.h"
#include "ops/elementwise_math.h"

namespace lockstep {

// Op is built by `op_of` from the node where it has state (an attribute), else
// default-constructed.
template <typename Loop, typename T, typename Op>
class PointwiseKernel : public Kernel {
 public:
  using OpOf = Op (*)(const Node&);
  explicit PointwiseKernel(const Node&) {}
  PointwiseKernel(const Node& node, OpOf op_of) : op_(op_of(node)) {}

  // The tensors' memory as T whatever their dtype says: the kernel was chosen by dtype, and T
  // is the backend's element type for it.
  absl::Status Run(const KernelIO& io) override {
    std::array<const T*, kInputs> x;  // any shape, all alike
    for (size_t j = 0; j < kInputs; ++j) x[j] = static_cast<const T*>(io.inputs[j].raw_data());
    return Loop::Run(op_, x, static_cast<T*>(io.outputs[0].raw_data()),  // x's shape
                     io.outputs[0].numel(), io);
  }

 private:
  static constexpr size_t kInputs = math::InputsOf<Op>();
  Op op_{};
};

template <typename Loop, typename Op>
struct PointwiseOf {
  template <typename T>
  using Kernel = PointwiseKernel<Loop, T, Op>;
};

// Registers Op's kernel for `op` on `device` in f32, bf16 and f16, each in the element type
// `Elements` (a FloatElements) holds it in. Inputs and output have one shape, so any layout
// goes: the first input's.
template <typename Loop, typename Elements, typename Op, typename... OpOf>
bool RegisterPointwiseOn(DeviceType device, const char* op, OpOf... op_of) {
  return RegisterFloatKernels<PointwiseOf<Loop, Op>::template Kernel, Elements>(
      {.op = op, .device = device, .layouts = SameLayoutAsFirstInput}, op_of...);
}

// Scale's functor from its attribute.
inline math::ScaleOp ScaleOf(const Node& node) {
  return {.scale = static_cast<float>(node.attrs.GetFloat("scale"))};
}

}  // namespace lockstep
