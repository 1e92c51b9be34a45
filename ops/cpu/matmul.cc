// oneDNN matmul; transposed operands are described with the "ba" format tag, so nothing is
// copied.

#include "graph/kernel.h"
#include "ops/cpu/dnnl_util.h"

namespace lockstep {
namespace {

using tag = dnnl::memory::format_tag;

class MatMulKernel : public Kernel {
 public:
  explicit MatMulKernel(const Node& node) {
    const bool transpose_a = node.attrs.GetBool("transpose_a");
    const bool transpose_b = node.attrs.GetBool("transpose_b");
    const Shape& a = node.inputs[0]->shape();
    const Shape& b = node.inputs[1]->shape();
    const int64_t m = a[transpose_a ? 1 : 0];
    const int64_t k = a[transpose_a ? 0 : 1];
    const int64_t n = b[transpose_b ? 0 : 1];
    const DType dtype = node.inputs[0]->dtype();
    auto a_desc = dnnl_util::Desc({m, k}, dtype, transpose_a ? tag::ba : tag::ab);
    auto b_desc = dnnl_util::Desc({k, n}, dtype, transpose_b ? tag::ba : tag::ab);
    auto y_desc = dnnl_util::Desc({m, n}, dtype, tag::ab);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_desc, b_desc, y_desc),
                                    dnnl_util::ScratchpadAttr(), dnnl_util::CpuEngine());
    step_ = dnnl_util::DnnlStep(dnnl::matmul(pd), pd.scratchpad_desc());
    step_.Arg(DNNL_ARG_SRC, a_desc);
    step_.Arg(DNNL_ARG_WEIGHTS, b_desc);
    step_.Arg(DNNL_ARG_DST, y_desc);
  }
  size_t WorkspaceBytes() const override { return step_.scratchpad_bytes(); }

  absl::Status Run(const KernelIO& io) override {
    return step_.Run({{DNNL_ARG_SRC, io.inputs[0].raw_data()},      // (M, K) or (K, M)
                      {DNNL_ARG_WEIGHTS, io.inputs[1].raw_data()},  // (K, N) or (N, K)
                      {DNNL_ARG_DST, io.outputs[0].raw_data()}},    // (M, N)
                     io.workspace);
  }

 private:
  dnnl_util::DnnlStep step_;
};

REGISTER_DNNL_KERNEL({.op = "MatMul", .create = dnnl_util::DnnlFactory<MatMulKernel>()});

}  // namespace
}  // namespace lockstep
