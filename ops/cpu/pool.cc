// oneDNN kernels for MaxPool, AvgPool, GlobalAvgPool and their gradients. Every activation of
// a pooling node has the same channel count, so all of them use the native blocked layout when
// it allows, else all are plain.

#include <algorithm>

#include "core/allocator.h"
#include "graph/kernel.h"
#include "ops/cpu/cpu_layouts.h"
#include "ops/cpu/dnnl_util.h"

namespace lockstep {
namespace {

using dnnl::memory;

enum class PoolKind { kMax, kAvg, kGlobalAvg };

// Descriptors of a pooling x (N, C, H, W) -> y (N, C, OH, OW), whichever of them the node reads
// or writes, in the layouts the graph assigned.
struct PoolDescs {
  dnnl::algorithm algorithm;
  memory::desc src, dst;
  memory::dims kernel, strides, padding;
};

PoolDescs MakePoolDescs(const Node& node, PoolKind kind, const Value& x, const Value& y) {
  PoolDescs d{.algorithm = dnnl::algorithm::pooling_max,
              .src = dnnl_util::Desc(x.shape(), x.dtype(), x.layout),
              .dst = dnnl_util::Desc(y.shape(), y.dtype(), y.layout)};
  if (kind == PoolKind::kGlobalAvg) {
    d.algorithm = dnnl::algorithm::pooling_avg_include_padding;
    d.kernel = {x.shape()[2], x.shape()[3]};
    d.strides = {1, 1};
    d.padding = {0, 0};
    return d;
  }
  if (kind == PoolKind::kAvg) {
    d.algorithm = node.attrs.GetBool("count_include_pad")
                      ? dnnl::algorithm::pooling_avg_include_padding
                      : dnnl::algorithm::pooling_avg_exclude_padding;
  }
  d.kernel = dnnl_util::Dims(node.attrs.GetInts("kernel"));
  d.strides = dnnl_util::Dims(node.attrs.GetInts("stride"));
  d.padding = dnnl_util::Dims(node.attrs.GetInts("padding"));
  return d;
}

dnnl::pooling_forward::primitive_desc ForwardPd(const PoolDescs& d, dnnl::prop_kind prop_kind) {
  dnnl::pooling_forward::desc desc(prop_kind, d.algorithm, d.src, d.dst, d.strides, d.kernel,
                                   d.padding, d.padding);
  return {desc, dnnl_util::ScratchpadAttr(), dnnl_util::CpuEngine()};
}

// x (N, C, H, W) -> y (N, C, OH, OW). MaxPoolWithArgmax also writes oneDNN's argmax workspace
// to its output 1 for the backward.
class PoolKernel : public Kernel {
 public:
  PoolKernel(const Node& node, PoolKind kind) : argmax_(node.outputs.size() == 2) {
    auto pd =
        ForwardPd(MakePoolDescs(node, kind, *node.inputs[0], *node.output()),
                  argmax_ ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference);
    pool_ = dnnl_util::DnnlStep(dnnl::pooling_forward(pd), pd.scratchpad_desc());
    pool_.Arg(DNNL_ARG_SRC, pd.src_desc());
    pool_.Arg(DNNL_ARG_DST, pd.dst_desc());
    if (argmax_) pool_.Arg(DNNL_ARG_WORKSPACE, dnnl_util::WorkspaceDesc(pd, *node.output(1)));
  }
  size_t WorkspaceBytes() const override { return pool_.scratchpad_bytes(); }
  absl::Status Run(const KernelIO& io) override {
    return pool_.Run({{DNNL_ARG_SRC, io.inputs[0].raw_data()},   // (N, C, H, W)
                      {DNNL_ARG_DST, io.outputs[0].raw_data()},  // (N, C, OH, OW)
                      {DNNL_ARG_WORKSPACE, argmax_ ? io.outputs[1].raw_data() : nullptr}},
                     io.workspace);
  }

 private:
  bool argmax_;
  dnnl_util::DnnlStep pool_;
};

// dy (N, C, OH, OW) -> dx (N, C, H, W). The max-pool backward needs the argmax workspace:
// MaxPoolGradWithArgmax reads it (inputs dy, argmax); MaxPoolGrad (inputs x, dy) recomputes the
// forward into its scratch: [shared scratchpad | recomputed y | argmax workspace].
class PoolGradKernel : public Kernel {
 public:
  PoolGradKernel(const Node& node, PoolKind kind)
      : dy_input_(node.op->name() == "MaxPoolGrad" ? 1 : 0),
        saved_argmax_(node.op->name() == "MaxPoolGradWithArgmax") {
    PoolDescs d = MakePoolDescs(node, kind, *node.output(), *node.inputs[dy_input_]);
    auto forward_pd = ForwardPd(d, dnnl::prop_kind::forward_training);
    dnnl::pooling_backward::desc desc(d.algorithm, d.src, d.dst, d.strides, d.kernel, d.padding,
                                      d.padding);
    dnnl::pooling_backward::primitive_desc pd(desc, dnnl_util::ScratchpadAttr(),
                                              dnnl_util::CpuEngine(), forward_pd);
    backward_ = dnnl_util::DnnlStep(dnnl::pooling_backward(pd), pd.scratchpad_desc());
    backward_.Arg(DNNL_ARG_DIFF_DST, pd.diff_dst_desc());
    backward_.Arg(DNNL_ARG_DIFF_SRC, pd.diff_src_desc());
    workspace_bytes_ = backward_.scratchpad_bytes();
    if (saved_argmax_) {
      backward_.Arg(DNNL_ARG_WORKSPACE, dnnl_util::WorkspaceDesc(pd, *node.inputs[1]));
      return;
    }
    if (kind != PoolKind::kMax) return;
    recompute_ = true;
    forward_ = dnnl_util::DnnlStep(dnnl::pooling_forward(forward_pd), forward_pd.scratchpad_desc());
    forward_.Arg(DNNL_ARG_SRC, forward_pd.src_desc());
    forward_.Arg(DNNL_ARG_DST, forward_pd.dst_desc());
    forward_.Arg(DNNL_ARG_WORKSPACE, forward_pd.workspace_desc());
    backward_.Arg(DNNL_ARG_WORKSPACE, pd.workspace_desc());
    y_offset_ = AlignUp(std::max(workspace_bytes_, forward_.scratchpad_bytes()));
    argmax_offset_ = y_offset_ + AlignUp(forward_pd.dst_desc().get_size());
    workspace_bytes_ = argmax_offset_ + forward_pd.workspace_desc().get_size();
  }
  size_t WorkspaceBytes() const override { return workspace_bytes_; }

  absl::Status Run(const KernelIO& io) override {
    void* dy = io.inputs[dy_input_].raw_data();  // (N, C, OH, OW)
    void* dx = io.outputs[0].raw_data();         // (N, C, H, W)
    if (!recompute_) {
      return backward_.Run(
          {{DNNL_ARG_DIFF_DST, dy},
           {DNNL_ARG_DIFF_SRC, dx},
           {DNNL_ARG_WORKSPACE, saved_argmax_ ? io.inputs[1].raw_data() : nullptr}},
          io.workspace);
    }
    char* scratch = static_cast<char*>(io.workspace);
    LS_RETURN_IF_ERROR(forward_.Run({{DNNL_ARG_SRC, io.inputs[0].raw_data()},  // (N, C, H, W)
                                     {DNNL_ARG_DST, scratch + y_offset_},      // (N, C, OH, OW)
                                     {DNNL_ARG_WORKSPACE, scratch + argmax_offset_}},
                                    io.workspace));
    return backward_.Run({{DNNL_ARG_DIFF_DST, dy},
                          {DNNL_ARG_DIFF_SRC, dx},
                          {DNNL_ARG_WORKSPACE, scratch + argmax_offset_}},
                         io.workspace);
  }

 private:
  dnnl_util::DnnlStep forward_;
  dnnl_util::DnnlStep backward_;
  int dy_input_;
  bool saved_argmax_;
  bool recompute_ = false;
  size_t y_offset_ = 0;
  size_t argmax_offset_ = 0;
  size_t workspace_bytes_ = 0;
};

REGISTER_DNNL_KERNEL({.op = "MaxPool",
                      .create = dnnl_util::DnnlFactory<PoolKernel>(PoolKind::kMax),
                      .layouts = BlockedWhereEligible});
REGISTER_DNNL_KERNEL({.op = "MaxPoolWithArgmax",
                      .create = dnnl_util::DnnlFactory<PoolKernel>(PoolKind::kMax),
                      .layouts = BlockedWhereEligible});
REGISTER_DNNL_KERNEL({.op = "AvgPool",
                      .create = dnnl_util::DnnlFactory<PoolKernel>(PoolKind::kAvg),
                      .layouts = BlockedWhereEligible});
REGISTER_DNNL_KERNEL({.op = "GlobalAvgPool",
                      .create = dnnl_util::DnnlFactory<PoolKernel>(PoolKind::kGlobalAvg),
                      .layouts = BlockedWhereEligible});
REGISTER_DNNL_KERNEL({.op = "MaxPoolGrad",
                      .create = dnnl_util::DnnlFactory<PoolGradKernel>(PoolKind::kMax),
                      .layouts = BlockedWhereEligible});
REGISTER_DNNL_KERNEL({.op = "MaxPoolGradWithArgmax",
                      .create = dnnl_util::DnnlFactory<PoolGradKernel>(PoolKind::kMax),
                      .layouts = BlockedWhereEligible});
REGISTER_DNNL_KERNEL({.op = "AvgPoolGrad",
                      .create = dnnl_util::DnnlFactory<PoolGradKernel>(PoolKind::kAvg),
                      .layouts = BlockedWhereEligible});
REGISTER_DNNL_KERNEL({.op = "GlobalAvgPoolGrad",
                      .create = dnnl_util::DnnlFactory<PoolGradKernel>(PoolKind::kGlobalAvg),
                      .layouts = BlockedWhereEligible});

}  // namespace
}  // namespace lockstep
