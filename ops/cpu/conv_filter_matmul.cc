#include "ops/cpu/conv_filter_matmul.h"

#include <algorithm>

#include "core/allocator.h"
#include "ops/cpu/dnnl_util.h"
#include "ops/cpu/preferred_weights.h"

namespace lockstep {
namespace {

using dnnl::memory;

// The unrolled windows may take this much scratch; above it oneDNN's per-image kernel stays.
constexpr size_t kMaxColumnsBytes = size_t{32} << 20;

// A convolution x (N, C, H, W) * w (O, C, KH, KW) -> y (N, O, OH, OW).
struct Geometry {
  int64_t n, c, h, w, o, oh, ow, kh, kw;
  int64_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;

  int64_t rows() const { return n * oh * ow; }  // the matmul's K
  int64_t cols() const { return c * kh * kw; }  // one unrolled window
};

// Inputs (x, dy), output dw.
Geometry GeometryOf(const Node& node) {
  const Shape& x = node.inputs[0]->shape();
  const Shape& dy = node.inputs[1]->shape();
  const Shape& dw = node.output()->shape();
  const auto& stride = node.attrs.GetInts("stride");
  const auto& padding = node.attrs.GetInts("padding");
  const auto& dilation = node.attrs.GetInts("dilation");
  return {.n = x[0],
          .c = x[1],
          .h = x[2],
          .w = x[3],
          .o = dy[1],
          .oh = dy[2],
          .ow = dy[3],
          .kh = dw[2],
          .kw = dw[3],
          .stride_h = stride[0],
          .stride_w = stride[1],
          .pad_h = padding[0],
          .pad_w = padding[1],
          .dilation_h = dilation[0],
          .dilation_w = dilation[1]};
}

size_t ColumnsBytes(const Geometry& g) {
  return static_cast<size_t>(g.rows() * g.cols()) * sizeof(float);
}

// columns[(n, oh, ow)][(c, kh, kw)] = x[n, c, oh*stride - pad + kh*dilation, ...], 0 outside.
void Unroll(const Geometry& g, const float* x, float* columns) {
#pragma omp parallel for collapse(2)
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t oh = 0; oh < g.oh; ++oh) {
      for (int64_t ow = 0; ow < g.ow; ++ow) {
        float* row = columns + ((n * g.oh + oh) * g.ow + ow) * g.cols();
        for (int64_t c = 0; c < g.c; ++c) {
          const float* plane = x + (n * g.c + c) * g.h * g.w;
          for (int64_t kh = 0; kh < g.kh; ++kh) {
            const int64_t ih = oh * g.stride_h - g.pad_h + kh * g.dilation_h;
            for (int64_t kw = 0; kw < g.kw; ++kw) {
              const int64_t iw = ow * g.stride_w - g.pad_w + kw * g.dilation_w;
              const bool inside = ih >= 0 && ih < g.h && iw >= 0 && iw < g.w;
              *row++ = inside ? plane[ih * g.w + iw] : 0.0f;
            }
          }
        }
      }
    }
  }
}

// Scratch: [scratchpads | dy^T | columns | dw plain, when the graph keeps it blocked].
class FilterGradByMatmulKernel : public Kernel {
 public:
  explicit FilterGradByMatmulKernel(const Node& node)
      : g_(GeometryOf(node)),
        transpose_(TransposeDy()),
        matmul_(Matmul()),
        dy_offset_(AlignUp(std::max(transpose_.scratchpad_bytes(), matmul_.scratchpad_bytes()))),
        columns_offset_(dy_offset_ + AlignUp(g_.o * g_.rows() * sizeof(float))),
        weights_(dnnl_util::Desc(node.output()->shape(), DType::kF32, node.output()->layout),
                 dnnl_util::Desc(node.output()->shape(), DType::kF32), /*into_preferred=*/false,
                 columns_offset_ + ColumnsBytes(g_)) {}

  size_t WorkspaceBytes() const override { return weights_.WorkspaceBytes(); }

  absl::Status Run(const KernelIO& io) override {
    char* scratch = static_cast<char*>(io.workspace);
    float* dy_t = reinterpret_cast<float*>(scratch + dy_offset_);
    float* columns = reinterpret_cast<float*>(scratch + columns_offset_);
    void* dw = io.outputs[0].raw_data();  // (O, C, KH, KW) in the graph's layout
    LS_RETURN_IF_ERROR(transpose_.Run({{DNNL_ARG_FROM, io.inputs[1].raw_data()},  // dy
                                       {DNNL_ARG_TO, dy_t}},
                                      io.workspace));
    Unroll(g_, io.inputs[0].data<float>(), columns);
    LS_RETURN_IF_ERROR(matmul_.Run({{DNNL_ARG_SRC, dy_t},
                                    {DNNL_ARG_WEIGHTS, columns},
                                    {DNNL_ARG_DST, weights_.Buffer(dw, io.workspace)}},
                                   io.workspace));
    return weights_.Reorder(dw, io.workspace);
  }

 private:
  // dy (N, O, OH, OW) plain -> dy^T (O, N*OH*OW): the same dims with O outermost.
  dnnl_util::DnnlStep TransposeDy() const {
    const memory::dims dims = {g_.n, g_.o, g_.oh, g_.ow};
    const memory::desc from(dims, memory::data_type::f32, memory::format_tag::abcd);
    const memory::desc to(dims, memory::data_type::f32, memory::format_tag::bacd);
    return dnnl_util::ReorderStep(from, to);
  }

  dnnl_util::DnnlStep Matmul() const {
    const auto f32 = memory::data_type::f32;
    const memory::desc a({g_.o, g_.rows()}, f32, memory::format_tag::ab);
    const memory::desc b({g_.rows(), g_.cols()}, f32, memory::format_tag::ab);
    const memory::desc y({g_.o, g_.cols()}, f32, memory::format_tag::ab);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, y), dnnl_util::ScratchpadAttr(),
                                    dnnl_util::CpuEngine());
    dnnl_util::DnnlStep step(dnnl::matmul(pd), pd.scratchpad_desc());
    step.Arg(DNNL_ARG_SRC, a);
    step.Arg(DNNL_ARG_WEIGHTS, b);
    step.Arg(DNNL_ARG_DST, y);
    return step;
  }

  Geometry g_;
  dnnl_util::DnnlStep transpose_;
  dnnl_util::DnnlStep matmul_;
  size_t dy_offset_;
  size_t columns_offset_;
  dnnl_util::PreferredWeights weights_;
};

}  // namespace

bool FilterGradByMatmulFits(const Node& node) {
  return node.attrs.GetInt("groups") == 1 && node.inputs[0]->layout == Layout::kPlain &&
         node.inputs[1]->layout == Layout::kPlain &&
         ColumnsBytes(GeometryOf(node)) <= kMaxColumnsBytes;
}

absl::StatusOr<std::unique_ptr<Kernel>> MakeFilterGradByMatmulKernel(const Node& node) {
  return dnnl_util::MakeDnnlKernel<FilterGradByMatmulKernel>(node);
}

}  // namespace lockstep
