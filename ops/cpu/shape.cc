#include <cstring>

#include "graph/kernel.h"

namespace lockstep {
namespace {

// Copies its input; Identity, Reshape and Flatten leave the bytes as they are.
class CopyKernel : public Kernel {
 public:
  explicit CopyKernel(const Node&) {}
  absl::Status Run(const KernelIO& io) override {
    if (io.outputs[0].raw_data() != io.inputs[0].raw_data()) {
      std::memcpy(io.outputs[0].raw_data(), io.inputs[0].raw_data(), io.outputs[0].nbytes());
    }
    return absl::OkStatus();
  }
};

// Bytes, whatever their dtype.
[[maybe_unused]] const bool kRegistered[] = {
    RegisterFloatKernels(
        {.op = "Identity", .create = MakeFactory<CopyKernel>(), .layouts = SameLayoutAsFirstInput}),
    RegisterFloatKernels({.op = "Reshape", .create = MakeFactory<CopyKernel>()}),
    RegisterFloatKernels({.op = "Flatten", .create = MakeFactory<CopyKernel>()}),
};

}  // namespace
}  // namespace lockstep
