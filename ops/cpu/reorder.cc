#include "ops/reorder.h"

#include "graph/kernel.h"
#include "ops/cpu/dnnl_util.h"

namespace lockstep {
namespace {

class ReorderKernel : public Kernel {
 public:
  explicit ReorderKernel(const Node& node) {
    const Value& x = *node.inputs[0];
    const Value& y = *node.output();
    step_ = dnnl_util::ReorderStep(dnnl_util::Desc(x.shape(), x.dtype(), x.layout),
                                   dnnl_util::Desc(y.shape(), y.dtype(), y.layout));
  }
  size_t WorkspaceBytes() const override { return step_.scratchpad_bytes(); }
  absl::Status Run(const KernelIO& io) override {
    return step_.Run({{DNNL_ARG_FROM, io.inputs[0].raw_data()},  // (N, C, H, W), one layout
                      {DNNL_ARG_TO, io.outputs[0].raw_data()}},  // (N, C, H, W), the other
                     io.workspace);
  }

 private:
  dnnl_util::DnnlStep step_;
};

// oneDNN 2.6 reorders bf16 with its jit kernels only on AVX-512 CPUs, and f16 nowhere: elsewhere
// its reference reorder takes about 100 ns an element, and the float32 fallback (its own
// conversions around a float32 reorder) is faster.
REGISTER_DNNL_KERNEL({.op = "Reorder",
                      .create = dnnl_util::DnnlFactory<ReorderKernel>(),
                      .layouts = ReorderLayouts});

}  // namespace
}  // namespace lockstep
