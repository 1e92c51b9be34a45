// oneDNN kernels for Conv2D and its backprop ops. Activations use the CPU's native blocked
// layout whenever their shape allows it, so consecutive oneDNN nodes never reorder. Ungrouped
// weights use the native blocked weight layout (OIhw8i8o or OIhw16i16o), which is what the
// forward and filter-gradient primitives prefer: the parameter, its gradient and its moment are
// kept in it, and only the input-gradient kernel reorders the weights each step (its primitive
// wants the blocks transposed). Where a primitive prefers another layout than the graph's, its
// kernel reorders to and from it in its scratch.

#include <algorithm>
#include <string>

#include "core/allocator.h"
#include "graph/kernel.h"
#include "ops/conv_layouts.h"
#include "ops/cpu/conv_filter_matmul.h"
#include "ops/cpu/cpu_layouts.h"
#include "ops/cpu/dnnl_util.h"
#include "ops/cpu/preferred_weights.h"

namespace lockstep {
namespace {

using dnnl::memory;

// Descriptors of a convolution x (N, C, H, W) * w (O, C/G, KH, KW) -> y (N, O, OH, OW), in the
// layouts the graph assigned, whichever of them the node reads or writes.
struct ConvDescs {
  memory::desc src, dst;
  memory::desc weights;      // as the graph keeps them; goihw (G, O/G, C/G, KH, KW) with groups
  memory::desc any_weights;  // the same dims, layout left to oneDNN
  memory::dims strides, dilates, padding;
};

// With x, w and y in the given layouts (the layout pass asks before values have theirs).
ConvDescs MakeConvDescs(const Node& node, const TensorType& x, Layout x_layout, const Shape& w,
                        Layout w_layout, const TensorType& y, Layout y_layout) {
  const int64_t groups = node.attrs.GetInt("groups");
  const memory::dims weight_dims =
      groups == 1 ? dnnl_util::Dims(w) : memory::dims{groups, w[0] / groups, w[1], w[2], w[3]};
  // The weights have x's dtype (the op's shape inference says so).
  const auto w_type = dnnl_util::DataType(x.dtype);
  ConvDescs d{.src = dnnl_util::Desc(x.shape, x.dtype, x_layout),
              .dst = dnnl_util::Desc(y.shape, y.dtype, y_layout),
              .weights = groups == 1 ? dnnl_util::Desc(w, x.dtype, w_layout)
                                     : memory::desc(weight_dims, w_type, memory::format_tag::goihw),
              .any_weights = memory::desc(weight_dims, w_type, memory::format_tag::any),
              .strides = dnnl_util::Dims(node.attrs.GetInts("stride")),
              .dilates = dnnl_util::Dims(node.attrs.GetInts("dilation")),
              .padding = dnnl_util::Dims(node.attrs.GetInts("padding"))};
  // oneDNN counts dilation from 0 (dense); we count it as PyTorch does, from 1.
  for (auto& dilate : d.dilates) dilate -= 1;
  return d;
}

// With x, w and y in the layouts the graph assigned.
ConvDescs MakeConvDescs(const Node& node, const Value& x, const Value& w, const Value& y) {
  return MakeConvDescs(node, x.type, x.layout, w.shape(), w.layout, y.type, y.layout);
}

// The forward primitive; the backprop kernels pass it to oneDNN as their hint.
dnnl::convolution_forward::primitive_desc ForwardPd(const ConvDescs& d) {
  dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_training,
                                       dnnl::algorithm::convolution_direct, d.src, d.any_weights,
                                       d.dst, d.strides, d.dilates, d.padding, d.padding);
  return {desc, dnnl_util::ScratchpadAttr(), dnnl_util::CpuEngine()};
}

class Conv2DKernel : public Kernel {
 public:
  explicit Conv2DKernel(const Node& node)
      : Conv2DKernel(MakeConvDescs(node, *node.inputs[0], *node.inputs[1], *node.output())) {}
  size_t WorkspaceBytes() const override { return weights_.WorkspaceBytes(); }

  absl::Status Run(const KernelIO& io) override {
    void* w = io.inputs[1].raw_data();  // (O, C/G, KH, KW) in the graph's layout
    LS_RETURN_IF_ERROR(weights_.Reorder(w, io.workspace));
    return conv_.Run({{DNNL_ARG_SRC, io.inputs[0].raw_data()},  // (N, C, H, W)
                      {DNNL_ARG_WEIGHTS, weights_.Buffer(w, io.workspace)},
                      {DNNL_ARG_DST, io.outputs[0].raw_data()}},  // (N, O, OH, OW)
                     io.workspace);
  }

 private:
  explicit Conv2DKernel(const ConvDescs& d) : Conv2DKernel(d, ForwardPd(d)) {}
  Conv2DKernel(const ConvDescs& d, const dnnl::convolution_forward::primitive_desc& pd)
      : conv_(dnnl::convolution_forward(pd), pd.scratchpad_desc()),
        weights_(d.weights, pd.weights_desc(), /*into_preferred=*/true, conv_.scratchpad_bytes()) {
    conv_.Arg(DNNL_ARG_SRC, pd.src_desc());
    conv_.Arg(DNNL_ARG_WEIGHTS, pd.weights_desc());
    conv_.Arg(DNNL_ARG_DST, pd.dst_desc());
  }

  dnnl_util::DnnlStep conv_;
  dnnl_util::PreferredWeights weights_;
};

dnnl::convolution_backward_data::primitive_desc BackwardDataPd(const ConvDescs& d) {
  dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, d.src,
                                             d.any_weights, d.dst, d.strides, d.dilates, d.padding,
                                             d.padding);
  return {desc, dnnl_util::ScratchpadAttr(), dnnl_util::CpuEngine(), ForwardPd(d)};
}

// (dy, w) -> dx.
class Conv2DBackpropInputKernel : public Kernel {
 public:
  explicit Conv2DBackpropInputKernel(const Node& node)
      : Conv2DBackpropInputKernel(
            MakeConvDescs(node, *node.output(), *node.inputs[1], *node.inputs[0])) {}
  size_t WorkspaceBytes() const override { return weights_.WorkspaceBytes(); }

  absl::Status Run(const KernelIO& io) override {
    void* w = io.inputs[1].raw_data();  // (O, C/G, KH, KW) in the graph's layout
    LS_RETURN_IF_ERROR(weights_.Reorder(w, io.workspace));
    return conv_.Run({{DNNL_ARG_DIFF_DST, io.inputs[0].raw_data()},  // (N, O, OH, OW)
                      {DNNL_ARG_WEIGHTS, weights_.Buffer(w, io.workspace)},
                      {DNNL_ARG_DIFF_SRC, io.outputs[0].raw_data()}},  // (N, C, H, W)
                     io.workspace);
  }

 private:
  explicit Conv2DBackpropInputKernel(const ConvDescs& d)
      : Conv2DBackpropInputKernel(d, BackwardDataPd(d)) {}
  Conv2DBackpropInputKernel(const ConvDescs& d,
                            const dnnl::convolution_backward_data::primitive_desc& pd)
      : conv_(dnnl::convolution_backward_data(pd), pd.scratchpad_desc()),
        weights_(d.weights, pd.weights_desc(), /*into_preferred=*/true, conv_.scratchpad_bytes()) {
    conv_.Arg(DNNL_ARG_DIFF_DST, pd.diff_dst_desc());
    conv_.Arg(DNNL_ARG_WEIGHTS, pd.weights_desc());
    conv_.Arg(DNNL_ARG_DIFF_SRC, pd.diff_src_desc());
  }

  dnnl_util::DnnlStep conv_;
  dnnl_util::PreferredWeights weights_;
};

dnnl::convolution_backward_weights::primitive_desc BackwardWeightsPd(const ConvDescs& d) {
  dnnl::convolution_backward_weights::desc desc(dnnl::algorithm::convolution_direct, d.src,
                                                d.any_weights, d.dst, d.strides, d.dilates,
                                                d.padding, d.padding);
  return {desc, dnnl_util::ScratchpadAttr(), dnnl_util::CpuEngine(), ForwardPd(d)};
}

// (x, dy) -> dw.
class Conv2DBackpropFilterKernel : public Kernel {
 public:
  explicit Conv2DBackpropFilterKernel(const Node& node)
      : Conv2DBackpropFilterKernel(
            MakeConvDescs(node, *node.inputs[0], *node.output(), *node.inputs[1])) {}
  size_t WorkspaceBytes() const override { return weights_.WorkspaceBytes(); }

  absl::Status Run(const KernelIO& io) override {
    void* dw = io.outputs[0].raw_data();  // (O, C/G, KH, KW) in the graph's layout
    LS_RETURN_IF_ERROR(conv_.Run({{DNNL_ARG_SRC, io.inputs[0].raw_data()},       // (N, C, H, W)
                                  {DNNL_ARG_DIFF_DST, io.inputs[1].raw_data()},  // (N, O, OH, OW)
                                  {DNNL_ARG_DIFF_WEIGHTS, weights_.Buffer(dw, io.workspace)}},
                                 io.workspace));
    return weights_.Reorder(dw, io.workspace);
  }

 private:
  explicit Conv2DBackpropFilterKernel(const ConvDescs& d)
      : Conv2DBackpropFilterKernel(d, BackwardWeightsPd(d)) {}
  Conv2DBackpropFilterKernel(const ConvDescs& d,
                             const dnnl::convolution_backward_weights::primitive_desc& pd)
      : conv_(dnnl::convolution_backward_weights(pd), pd.scratchpad_desc()),
        weights_(d.weights, pd.diff_weights_desc(), /*into_preferred=*/false,
                 conv_.scratchpad_bytes()) {
    conv_.Arg(DNNL_ARG_SRC, pd.src_desc());
    conv_.Arg(DNNL_ARG_DIFF_DST, pd.diff_dst_desc());
    conv_.Arg(DNNL_ARG_DIFF_WEIGHTS, pd.diff_weights_desc());
  }

  dnnl_util::DnnlStep conv_;
  dnnl_util::PreferredWeights weights_;
};

// A blocked weight layout the job shares, where eligible; grouped weights stay plain.
Layout WeightLayout(const Node& node, const Value& w, const SharedLayouts& shared) {
  return node.attrs.GetInt("groups") == 1 ? WeightLayoutIfEligible(w, shared) : Layout::kPlain;
}

// Activations blocked where eligible, the weights in WeightLayout: input kWeightsInput, or the
// output when kWeightsInput is kConvWeightsOut (the filter gradient).
template <int kWeightsInput>
LayoutChoice ConvLayouts(const Node& node, const std::vector<Layout>&,
                         const SharedLayouts& shared) {
  return ConvolutionLayouts(
      node, kWeightsInput, [&](const Value& w) { return WeightLayout(node, w, shared); },
      BlockedIfEligible);
}

// Whether oneDNN would run a backprop node with its reference kernel under `choice`.
bool UsesReferenceKernel(const Node& node, const LayoutChoice& choice) {
  const bool filter = node.op->name() == "Conv2DBackpropFilter";
  // The forward's x and y: (x, dy) -> dw, or (dy, w) -> dx.
  const Value& x = filter ? *node.inputs[0] : *node.output();
  const Value& y = filter ? *node.inputs[1] : *node.inputs[0];
  const Shape& w = filter ? node.output()->shape() : node.inputs[1]->shape();
  const Layout w_layout = filter ? choice.outputs[0] : choice.inputs[1];
  const ConvDescs d = MakeConvDescs(node, x.type, filter ? choice.inputs[0] : choice.outputs[0], w,
                                    w_layout, y.type, filter ? choice.inputs[1] : choice.inputs[0]);
  try {
    const std::string impl =
        filter ? BackwardWeightsPd(d).impl_info_str() : BackwardDataPd(d).impl_info_str();
    return impl.starts_with("ref");
  } catch (const dnnl::error&) {
    return false;  // the kernel's factory reports it
  }
}

// For some shapes oneDNN has no fast backward kernel with blocked activations (ResNet's 7x7 stem
// and LeNet's 6-channel input next to blocked ones, 3x3 windows over 2x2 maps with AVX2), only its
// reference kernel, thousands of times slower: such backprop nodes keep every activation plain,
// where its gemm-based kernels run (reordering the weights in their scratch).
template <int kWeightsInput>
LayoutChoice BackpropLayouts(const Node& node, const std::vector<Layout>& producer_layouts,
                             const SharedLayouts& shared) {
  LayoutChoice choice = ConvLayouts<kWeightsInput>(node, producer_layouts, shared);
  if (!UsesReferenceKernel(node, choice)) return choice;
  // Only the activations: the weights' layout does not decide which kernel runs.
  for (size_t i = 0; i < choice.inputs.size(); ++i) {
    if (static_cast<int>(i) != kWeightsInput) choice.inputs[i] = Layout::kPlain;
  }
  if (kWeightsInput != kConvWeightsOut) choice.outputs[0] = Layout::kPlain;
  return choice;
}

// oneDNN's filter-gradient kernel, or one matmul over the whole batch (float32) where oneDNN
// would run its gemm-based kernel image by image (see conv_filter_matmul.h).
absl::StatusOr<std::unique_ptr<Kernel>> CreateBackpropFilterKernel(const Node& node,
                                                                   const KernelContext&) {
  if (node.inputs[0]->dtype() == DType::kF32 && FilterGradByMatmulFits(node)) {
    std::string impl;
    try {
      impl =
          BackwardWeightsPd(MakeConvDescs(node, *node.inputs[0], *node.output(), *node.inputs[1]))
              .impl_info_str();
    } catch (const dnnl::error&) {
      // No oneDNN kernel at all: the matmul does it.
    }
    if (impl.empty() || impl.find("gemm") != std::string::npos) {
      return MakeFilterGradByMatmulKernel(node);
    }
  }
  return dnnl_util::MakeDnnlKernel<Conv2DBackpropFilterKernel>(node);
}

REGISTER_DNNL_KERNEL({.op = "Conv2D",
                      .create = dnnl_util::DnnlFactory<Conv2DKernel>(),
                      .layouts = ConvLayouts<1>});
REGISTER_DNNL_KERNEL({.op = "Conv2DBackpropInput",
                      .create = dnnl_util::DnnlFactory<Conv2DBackpropInputKernel>(),
                      .layouts = BackpropLayouts<1>});
REGISTER_DNNL_KERNEL({.op = "Conv2DBackpropFilter",
                      .create = CreateBackpropFilterKernel,
                      .layouts = BackpropLayouts<kConvWeightsOut>});

}  // namespace
}  // namespace lockstep
