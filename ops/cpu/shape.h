#pragma once

// The CPU's copy of a value's bytes (Identity, Reshape, Flatten), registered for the CPU in
// ops/cpu/shape.cc and for the tests' backend.

#include "graph/kernel.h"

namespace lockstep::cpu {

// Copies input 0 into output 0, whatever its dtype; nothing when the two share their memory.
class CopyKernel : public Kernel {
 public:
  explicit CopyKernel(const Node&) {}
  absl::Status Run(const KernelIO& io) override;
};

}  // namespace lockstep::cpu
