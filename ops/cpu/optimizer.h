#pragma once

// The CPU's Momentum update, registered for the CPU in ops/cpu/optimizer.cc and for the tests'
// backend, so that one loop (and its dynamic loss scaling) serves both.

#include "graph/kernel.h"
#include "ops/optimizer_math.h"

namespace lockstep::cpu {

// ((param, grad, moment) x N, lr [] [, loss_scale [], finite []]) -> ((param', moment') x N), in
// place and in any layout: the update is element-wise over buffers of the same shape.
class MomentumKernel : public Kernel {
 public:
  explicit MomentumKernel(const Node& node);
  absl::Status Run(const KernelIO& io) override;

 private:
  math::MomentumParams params_;  // unscale: 1 / the loss_scale attribute
};

}  // namespace lockstep::cpu
