#pragma once

// How kernels may compute, for the graphs of one compilation: whoever compiles sets it in
// CompileOptions::config (the binaries from $LOCKSTEP_CUDA_TF32 and $LOCKSTEP_DETERMINISTIC);
// the kernels that can trade precision or repeatability for speed read it when they are built.

namespace lockstep {

struct MathOptions {
  // Float32 convolutions and matmuls may use TF32 tensor cores (10-bit mantissa operands, float32
  // accumulation), as PyTorch allows by default for convolutions. Off keeps full float32.
  bool allow_tf32 = true;
  // Every run gives the same bits: cuDNN convolutions use algorithms without atomics wherever
  // one exists, so runs and resumes repeat bit for bit. Off lets cuDNN's heuristics pick the
  // fastest algorithm, as PyTorch does unless told to be deterministic.
  bool deterministic = true;
};

}  // namespace lockstep
