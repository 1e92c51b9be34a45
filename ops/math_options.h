#pragma once

// How kernels may compute in float32, for the graphs of one compilation: whoever compiles sets
// it in CompileOptions::config (the binaries from $LOCKSTEP_CUDA_TF32); the kernels that can
// trade precision for speed read it when they are built.

namespace lockstep {

struct Float32MathOptions {
  // Convolutions and matmuls may use TF32 tensor cores (10-bit mantissa operands, float32
  // accumulation), as PyTorch allows by default for convolutions. Off keeps full float32.
  bool allow_tf32 = true;
};

}  // namespace lockstep
