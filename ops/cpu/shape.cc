#include "ops/cpu/shape.h"

#include <cstring>

namespace lockstep {
namespace cpu {

absl::Status CopyKernel::Run(const KernelIO& io) {
  if (io.outputs[0].raw_data() != io.inputs[0].raw_data()) {
    std::memcpy(io.outputs[0].raw_data(), io.inputs[0].raw_data(), io.outputs[0].nbytes());
  }
  return absl::OkStatus();
}

}  // namespace cpu

namespace {

using cpu::CopyKernel;

// Identity, Reshape and Flatten leave the bytes as they are, whatever their dtype.
[[maybe_unused]] const bool kRegistered[] = {
    RegisterFloatKernels(
        {.op = "Identity", .create = MakeFactory<CopyKernel>(), .layouts = SameLayoutAsFirstInput}),
    RegisterFloatKernels({.op = "Reshape", .create = MakeFactory<CopyKernel>()}),
    RegisterFloatKernels({.op = "Flatten", .create = MakeFactory<CopyKernel>()}),
};

}  // namespace
}  // namespace lockstep
