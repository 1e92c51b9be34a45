// CUDA kernel of Reorder: a copy between equal layouts, a permutation between plain and NHWC
// (ops/cuda/cuda_layouts.h), in any dtype. Other layouts (the CPU's blocked ones) are a compile
// error.

#include "ops/reorder.h"

#include <memory>

#include "core/layout.h"
#include "graph/kernel.h"
#include "ops/cuda/copy_kernel.h"
#include "ops/cuda/cuda_layouts.h"
#include "ops/cuda/reorder_kernels.h"

namespace lockstep {
namespace {

class NhwcReorderKernel : public Kernel {
 public:
  NhwcReorderKernel(const Node& node, bool to_nhwc)
      : element_bytes_(SizeOf(node.output()->dtype())), to_nhwc_(to_nhwc) {
    const Shape& shape = node.output()->shape();
    dims_ = {shape[0], shape[1], shape[2], shape[3]};
  }
  absl::Status Run(const KernelIO& io) override {
    CUDA_RETURN_IF_ERROR(cuda::LaunchNhwcPermute(io.inputs[0].raw_data(),   // (N, C, H, W) stored
                                                 io.outputs[0].raw_data(),  // in the other order
                                                 dims_, element_bytes_, to_nhwc_,
                                                 cuda::StreamOf(io)));
    return absl::OkStatus();
  }

 private:
  std::array<int64_t, 4> dims_;
  size_t element_bytes_;
  bool to_nhwc_;
};

// The layouts are checked once, when the graph is compiled: the values' and the attribute's.
absl::StatusOr<std::unique_ptr<Kernel>> CreateReorder(const Node& node, const KernelContext&) {
  const Layout from = node.inputs[0]->layout;
  Layout target = Layout::kPlain;
  LS_CHECK(ParseLayout(node.attrs.GetString("layout"), &target)) << node.Describe();
  const Layout to = target != Layout::kPlain ? target : node.output()->layout;
  const Layout nhwc = cuda::NhwcLayout();
  if (from == to) return std::make_unique<cuda::CopyKernel>(node);
  if ((from == Layout::kPlain && to == nhwc) || (from == nhwc && to == Layout::kPlain)) {
    return std::make_unique<NhwcReorderKernel>(node, to == nhwc);
  }
  return absl::UnimplementedError(absl::StrCat(node.Describe(), ": CUDA reorders plain and ",
                                               LayoutName(nhwc), " values, got a Reorder from ",
                                               LayoutName(from), " to ", LayoutName(to)));
}

constexpr DType kReorderDTypes[] = {DType::kF32, DType::kF64,  DType::kI32, DType::kI64,
                                    DType::kU8,  DType::kBF16, DType::kF16};

[[maybe_unused]] const bool kRegistered = [] {
  for (DType dtype : kReorderDTypes) {
    KernelRegistry::Global().Register({.op = "Reorder",
                                       .device = DeviceType::kCUDA,
                                       .dtype = dtype,
                                       .create = CreateReorder,
                                       .layouts = ReorderLayouts});
  }
  return true;
}();

}  // namespace
}  // namespace lockstep
