#pragma once

// Shared oneDNN plumbing for the CPU kernels: the engine and stream, memory descriptors for
// our shapes and layouts, the DNNL_RETURN_IF_ERROR wrapper, and DnnlStep, a primitive whose
// arguments and user-mode scratchpad are bound once so a step only swaps data pointers.

#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/layout.h"
#include "core/logging.h"
#include "core/status.h"
#include "core/tensor.h"
#include "graph/graph.h"
#include "graph/kernel.h"

namespace lockstep::dnnl_util {

dnnl::engine& CpuEngine();
// oneDNN streams are not thread-safe: one per thread.
dnnl::stream& CpuStream();

dnnl::memory::dims Dims(const Shape& shape);
dnnl::memory::data_type DataType(DType dtype);
// 4-D: nchw, nChw8c or nChw16c; 2-D: nc; 1-D: a.
dnnl::memory::desc Desc(const Shape& shape, DType dtype, Layout layout = Layout::kPlain);
dnnl::memory::desc Desc(const Shape& shape, DType dtype, dnnl::memory::format_tag tag);

// Attributes every kernel uses: user-managed scratchpad, so the executor's workspace holds it.
dnnl::primitive_attr ScratchpadAttr();

absl::Status ErrorStatus(const dnnl::error& e, const char* call, const char* file, int line);

// K(node, args...) for kernels that build oneDNN primitives in their constructor: a dnnl::error
// there becomes a Status instead of escaping.
template <typename K, typename... Args>
absl::StatusOr<std::unique_ptr<Kernel>> MakeDnnlKernel(const Node& node, Args... args) {
  try {
    return std::make_unique<K>(node, args...);
  } catch (const dnnl::error& e) {
    return ErrorStatus(e, "building the kernel's primitive", __FILE__, __LINE__);
  }
}

// A kernel factory for MakeDnnlKernel<K>(node, args...).
template <typename K, typename... Args>
KernelFactory DnnlFactory(Args... args) {
  return [=](const Node& node, const KernelContext&) { return MakeDnnlKernel<K>(node, args...); };
}

// A primitive plus its argument memories. Arguments are declared at compile time with Arg();
// Run() points them at this step's tensors and the workspace and executes.
class DnnlStep {
 public:
  DnnlStep() = default;
  // DnnlStep(dnnl::convolution_forward(pd), pd.scratchpad_desc())
  DnnlStep(dnnl::primitive primitive, const dnnl::memory::desc& scratchpad)
      : primitive_(std::move(primitive)), scratchpad_bytes_(scratchpad.get_size()) {
    if (scratchpad_bytes_ > 0) Arg(DNNL_ARG_SCRATCHPAD, scratchpad);
  }
  // Declares argument `arg` (DNNL_ARG_SRC, ...) with its descriptor.
  void Arg(int arg, const dnnl::memory::desc& desc);
  size_t scratchpad_bytes() const { return scratchpad_bytes_; }
  // handles: (arg, data pointer) for every declared argument but the scratchpad; an argument
  // the primitive was built without (an optional workspace) may come with nullptr.
  absl::Status Run(std::initializer_list<std::pair<int, void*>> handles, void* workspace);

 private:
  dnnl::primitive primitive_;
  size_t scratchpad_bytes_ = 0;
  std::unordered_map<int, dnnl::memory> args_;
};

// A reorder between two descriptors of the same dims, arguments DNNL_ARG_FROM and DNNL_ARG_TO
// declared.
DnnlStep ReorderStep(const dnnl::memory::desc& from, const dnnl::memory::desc& to);

// The workspace oneDNN keeps for `pd`'s backward (a max pool's argmax, a fused ReLU's mask), held
// by `holder`, an opaque byte tensor of the graph sized for it.
template <typename Pd>
dnnl::memory::desc WorkspaceDesc(const Pd& pd, const Value& holder) {
  const dnnl::memory::desc desc = pd.workspace_desc();
  LS_CHECK(desc.get_size() <= holder.bytes())
      << "oneDNN's workspace takes " << desc.get_size() << " bytes, output " << holder.index
      << " of " << holder.producer->Describe() << " holds " << holder.bytes();
  return desc;
}

// Registers `def` for float32, and for bf16 where the CPU computes it natively (elsewhere the
// float32 fallback, ops/cpu/float32_fallback.cc, runs bf16 nodes). oneDNN 2.6 has no f16 CPU
// kernels: f16 nodes always take the fallback.
bool RegisterFloat32AndBf16(KernelDef def);

}  // namespace lockstep::dnnl_util

// Runs a oneDNN call; a dnnl::error becomes a Status with the call text and file:line.
#define DNNL_RETURN_IF_ERROR(expr)                                                          \
  do {                                                                                      \
    try {                                                                                   \
      expr;                                                                                 \
    } catch (const dnnl::error& ls_dnnl_error_) {                                           \
      return ::lockstep::dnnl_util::ErrorStatus(ls_dnnl_error_, #expr, __FILE__, __LINE__); \
    }                                                                                       \
  } while (0)

// REGISTER_DNNL_KERNEL({.op = "Conv2D", ...}): REGISTER_KERNEL in float32 and bf16.
#define REGISTER_DNNL_KERNEL(...)                                             \
  [[maybe_unused]] static const bool LS_KERNEL_CONCAT(ls_kernel_, __LINE__) = \
      ::lockstep::dnnl_util::RegisterFloat32AndBf16(::lockstep::KernelDef __VA_ARGS__)
