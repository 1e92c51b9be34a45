#pragma once

// Every op on every backend, as ggml's test-backend-ops: the same subgraph, compiled for the CPU
// and for CUDA and fed the same inputs, must give the same outputs. Tests skip where no GPU is
// present; the comparison is against the CPU kernels, which have their own numeric tests.

#include <string>
#include <vector>

#include "tests/testing/grad_check.h"

namespace lockstep::testing {

// True when this build has CUDA and the machine a CUDA device.
bool HasGpu();

// Output k of the CUDA run agrees with output k of the CPU run within
// tolerance * max(1, max |cpu output|), element by element.
void ExpectOutputsMatch(const std::vector<std::vector<float>>& cpu,
                        const std::vector<std::vector<float>>& gpu, double tolerance);

// Every f32 and i32 output of `build` agrees between the CPU and CUDA (device 0) within
// tolerance * max(1, max |cpu output|), element by element. `config` as for RunForward.
void ExpectCudaMatchesCpu(const std::vector<GradCheckInput>& inputs, const BuildFn& build,
                          double tolerance = 1e-4, const PassConfig& config = {});
// Shorthand for one op over the inputs.
void ExpectCudaOpMatchesCpu(const std::string& op, const std::vector<GradCheckInput>& inputs,
                            const Attrs& attrs = {}, double tolerance = 1e-4,
                            const PassConfig& config = {});

}  // namespace lockstep::testing

#define LS_SKIP_WITHOUT_GPU() \
  if (!::lockstep::testing::HasGpu()) GTEST_SKIP() << "no CUDA device on this machine"
