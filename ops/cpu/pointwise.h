#pragma once

// The CPU's element-wise loop, under the kernel every backend shares (ops/pointwise_kernel.h):
// y[i] = op(x0[i], x1[i], ...) for as many inputs as the functor of ops/elementwise_math.h
// takes. A new float element-wise op needs its functor and one RegisterPointwise line here.

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "core/half.h"
#include "graph/kernel.h"
#include "ops/cpu/vector_loop.h"
#include "ops/elementwise_math.h"
#include "ops/pointwise_kernel.h"

namespace lockstep::cpu {

// Rounds an intermediate into T and back, for functors that take a rounding after their inputs
// (math::AddReluGradOp): the loop then vectorizes where T is 16-bit.
template <typename T>
struct RoundThrough {
  float operator()(float x) const { return ToFloat(FloatTo<T>(x)); }
};

// The CPU's loop of PointwiseKernel (ops/pointwise_kernel.h). T is float, BFloat16 or Float16:
// each element is loaded to float, the functor computes in float and its result is rounded once
// into T, so a bf16 loop reads and writes half the bytes of the float32 one and needs no bf16
// hardware.
struct PointwiseLoop {
  // `op` is a local: the stores to y cannot alias its state.
  template <typename T, typename Op, size_t kInputs>
  static absl::Status Run(const Op op, const std::array<const T*, kInputs>& x,  // any shape
                          T* y, int64_t n, const KernelIO&) {                   // x's shape
    ParallelFor(n, [&](int64_t i) {
      y[i] = FloatTo<T>(Apply(op, x, i, std::make_index_sequence<kInputs>{}));
    });
    return absl::OkStatus();
  }

 private:
  template <typename T, typename Op, size_t kInputs, size_t... J>
  static float Apply(const Op& op, const std::array<const T*, kInputs>& x, int64_t i,
                     std::index_sequence<J...>) {
    if constexpr (std::is_invocable_v<const Op&, decltype(static_cast<float>(J))...,
                                      RoundThrough<T>>) {
      return op(ToFloat(x[J][i])..., RoundThrough<T>{});
    } else {
      return op(ToFloat(x[J][i])...);
    }
  }
};

template <typename T, typename Op>
using PointwiseKernel = lockstep::PointwiseKernel<PointwiseLoop, T, Op>;

// Registers Op's kernel for `op` on the CPU in f32, bf16 and f16; `op_of` builds a functor with
// state from the node.
template <typename Op, typename... OpOf>
bool RegisterPointwise(const char* op, OpOf... op_of) {
  return RegisterPointwiseOn<PointwiseLoop, HostFloats, Op>(DeviceType::kCPU, op, op_of...);
}

}  // namespace lockstep::cpu
