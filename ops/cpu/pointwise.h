#pragma once

// The CPU's element-wise kernel, one class over the functors of ops/elementwise_math.h:
// y[i] = op(x0[i], x1[i], ...) for as many inputs as the functor takes. A new float element-wise
// op needs its functor and one RegisterPointwise line here.

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "core/half.h"
#include "graph/kernel.h"
#include "ops/cpu/vector_loop.h"
#include "ops/elementwise_math.h"

namespace lockstep::cpu {

// Rounds an intermediate into T and back, for functors that take a rounding after their inputs
// (math::AddReluGradOp): the loop then vectorizes where T is 16-bit.
template <typename T>
struct RoundThrough {
  float operator()(float x) const { return ToFloat(FloatTo<T>(x)); }
};

// T is float, BFloat16 or Float16: each element is loaded to float, the functor computes in float
// and its result is rounded once into T, so a bf16 loop reads and writes half the bytes of the
// float32 one and needs no bf16 hardware. Op is built by `op_of` from the node where it has
// state (an attribute), else default-constructed.
template <typename T, typename Op>
class PointwiseKernel : public Kernel {
 public:
  using OpOf = Op (*)(const Node&);
  explicit PointwiseKernel(const Node&) {}
  PointwiseKernel(const Node& node, OpOf op_of) : op_(op_of(node)) {}

  absl::Status Run(const KernelIO& io) override {
    std::array<const T*, kInputs> x;  // any shape, all alike
    for (size_t j = 0; j < kInputs; ++j) x[j] = io.inputs[j].data<T>();
    T* y = io.outputs[0].data<T>();  // the inputs' shape
    const Op op = op_;               // a local: the stores to y cannot alias its state
    ParallelFor(io.outputs[0].numel(), [&](int64_t i) {
      y[i] = FloatTo<T>(Apply(op, x, i, std::make_index_sequence<kInputs>{}));
    });
    return absl::OkStatus();
  }

 private:
  static constexpr size_t kInputs = math::InputsOf<Op>();

  template <size_t... J>
  static float Apply(const Op& op, const std::array<const T*, kInputs>& x, int64_t i,
                     std::index_sequence<J...>) {
    if constexpr (std::is_invocable_v<const Op&, decltype(static_cast<float>(J))...,
                                      RoundThrough<T>>) {
      return op(ToFloat(x[J][i])..., RoundThrough<T>{});
    } else {
      return op(ToFloat(x[J][i])...);
    }
  }

  Op op_{};
};

template <typename Op>
struct PointwiseOf {
  template <typename T>
  using Kernel = PointwiseKernel<T, Op>;
};

// Registers Op's kernel for `op` on the CPU in f32, bf16 and f16. Inputs and output have one
// shape, so any layout goes: the first input's.
template <typename Op, typename... OpOf>
bool RegisterPointwise(const char* op, OpOf... op_of) {
  return RegisterFloatKernels<PointwiseOf<Op>::template Kernel, HostFloats>(
      {.op = op, .layouts = SameLayoutAsFirstInput}, op_of...);
}

}  // namespace lockstep::cpu
