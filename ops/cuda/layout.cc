// CUDA kernel of Reorder. CUDA values are all plain (the blocked layouts are oneDNN's), so a
// Reorder here is a copy between plain layouts; a blocked one is a compile error.

#include "core/layout.h"

#include <memory>

#include "graph/kernel.h"
#include "ops/cuda/copy_kernel.h"

namespace lockstep {
namespace {

// The layouts are checked once, when the graph is compiled: the values' and the attribute's.
absl::StatusOr<std::unique_ptr<Kernel>> CreateReorder(const Node& node, const KernelContext&) {
  const Layout from = node.inputs[0]->layout;
  Layout target = Layout::kPlain;
  LS_CHECK(ParseLayout(node.attrs.GetString("layout"), &target)) << node.Describe();
  const Layout to = target != Layout::kPlain ? target : node.output()->layout;
  if (from != Layout::kPlain || to != Layout::kPlain) {
    return absl::UnimplementedError(absl::StrCat(node.Describe(),
                                                 ": CUDA values are plain, got a Reorder from ",
                                                 LayoutName(from), " to ", LayoutName(to)));
  }
  return std::make_unique<cuda::CopyKernel>(node);
}

REGISTER_KERNEL({.op = "Reorder", .device = DeviceType::kCUDA, .create = CreateReorder});

}  // namespace
}  // namespace lockstep
