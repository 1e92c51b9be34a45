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
[[maybe_unused]] const bool kRegistered = [] {
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    KernelRegistry::Global().Register({.op = "Identity",
                                       .dtype = dtype,
                                       .create = MakeFactory<CopyKernel>(),
                                       .layouts = SameLayoutAsFirstInput});
    KernelRegistry::Global().Register(
        {.op = "Reshape", .dtype = dtype, .create = MakeFactory<CopyKernel>()});
    KernelRegistry::Global().Register(
        {.op = "Flatten", .dtype = dtype, .create = MakeFactory<CopyKernel>()});
  }
  return true;
}();

}  // namespace
}  // namespace lockstep
