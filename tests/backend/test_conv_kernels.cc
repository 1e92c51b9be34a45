// The test device's convolution and max-pooling kernels: plain loops that sum in double. The
// convolutions take plain memory; max pooling runs in plain or test_nc4hw, so that the blocked
// layout holds the second convolution's activations from its ReLU to the flatten.

#include <algorithm>
#include <limits>
#include <vector>

#include "tests/backend/test_backend.h"

namespace lockstep::test_backend {
namespace {

// Every tap of a convolution: an output element, a filter element and the input element they
// meet at, skipping taps in the zero padding, as flat offsets into y (N, O, OH, OW),
// w (O, C/groups, KH, KW) and x (N, C, H, W).
class ConvTaps {
 public:
  ConvTaps(const Node& node, const Shape& x, const Shape& w)
      : x_(x),
        w_(w),
        stride_(node.attrs.GetInts("stride")),
        padding_(node.attrs.GetInts("padding")),
        dilation_(node.attrs.GetInts("dilation")),
        groups_(node.attrs.GetInt("groups")) {
    for (int i = 0; i < 2; ++i) {
      const int64_t extent = (w[2 + i] - 1) * dilation_[i] + 1;
      out_[i] = (x[2 + i] + 2 * padding_[i] - extent) / stride_[i] + 1;
    }
  }

  template <typename Visit>
  void ForEach(Visit visit) const {
    const int64_t group_outputs = w_[0] / groups_, group_inputs = w_[1];
    for (int64_t n = 0; n < x_[0]; ++n) {
      for (int64_t o = 0; o < w_[0]; ++o) {
        const int64_t first_input = o / group_outputs * group_inputs;
        for (int64_t oy = 0; oy < out_[0]; ++oy) {
          for (int64_t ox = 0; ox < out_[1]; ++ox) {
            const int64_t y = ((n * w_[0] + o) * out_[0] + oy) * out_[1] + ox;
            for (int64_t c = 0; c < group_inputs; ++c) {
              for (int64_t ky = 0; ky < w_[2]; ++ky) {
                const int64_t iy = oy * stride_[0] - padding_[0] + ky * dilation_[0];
                if (iy < 0 || iy >= x_[2]) continue;
                for (int64_t kx = 0; kx < w_[3]; ++kx) {
                  const int64_t ix = ox * stride_[1] - padding_[1] + kx * dilation_[1];
                  if (ix < 0 || ix >= x_[3]) continue;
                  visit(y, ((o * group_inputs + c) * w_[2] + ky) * w_[3] + kx,
                        ((n * x_[1] + first_input + c) * x_[2] + iy) * x_[3] + ix);
                }
              }
            }
          }
        }
      }
    }
  }

 private:
  Shape x_, w_;
  std::vector<int64_t> stride_, padding_, dilation_;
  int64_t groups_;
  int64_t out_[2] = {0, 0};
};

// Which of y, x, w the kernel computes from the other two (its inputs, in the op's order).
enum class Solve { kY, kX, kW };

Shape InputShape(const Node& node, Solve solve) {
  return solve == Solve::kX ? node.attrs.GetInts("input_shape") : node.inputs[0]->shape();
}

Shape FilterShape(const Node& node, Solve solve) {
  return solve == Solve::kW ? node.attrs.GetInts("filter_shape") : node.inputs[1]->shape();
}

// Conv2D (x, w) -> y; Conv2DBackpropInput (dy, w) -> dx; Conv2DBackpropFilter (x, dy) -> dw.
template <Solve kSolve>
class ConvKernel : public Kernel {
 public:
  explicit ConvKernel(const Node& node)
      : taps_(node, InputShape(node, kSolve), FilterShape(node, kSolve)) {}

  absl::Status Run(const KernelIO& io) override {
    const float* a = io.inputs[0].data<float>();
    const float* b = io.inputs[1].data<float>();
    std::vector<double> sum(io.outputs[0].numel(), 0.0);
    taps_.ForEach([&](int64_t y, int64_t w, int64_t x) {
      if constexpr (kSolve == Solve::kY) {
        sum[y] += static_cast<double>(a[x]) * b[w];  // a = x (N, C, H, W), b = w (O, C, KH, KW)
      } else if constexpr (kSolve == Solve::kX) {
        sum[x] += static_cast<double>(a[y]) * b[w];  // a = dy (N, O, OH, OW), b = w
      } else {
        sum[w] += static_cast<double>(a[x]) * b[y];  // a = x, b = dy (N, O, OH, OW)
      }
    });
    float* out = io.outputs[0].data<float>();  // y, dx or dw
    for (size_t i = 0; i < sum.size(); ++i) out[i] = static_cast<float>(sum[i]);
    return absl::OkStatus();
  }

 private:
  ConvTaps taps_;
};

REGISTER_KERNEL({.op = "Conv2D",
                 .device = kTestDeviceType,
                 .create = MakeFactory<ConvKernel<Solve::kY>>()});
REGISTER_KERNEL({.op = "Conv2DBackpropInput",
                 .device = kTestDeviceType,
                 .create = MakeFactory<ConvKernel<Solve::kX>>()});
REGISTER_KERNEL({.op = "Conv2DBackpropFilter",
                 .device = kTestDeviceType,
                 .create = MakeFactory<ConvKernel<Solve::kW>>()});

// Each pooling window's first maximum (row-major), padding counting as -inf, in the layouts
// that x (the node's input 0) and the pooled value `y` (MaxPool's output, MaxPoolGrad's dy) have.
class MaxPoolWindows {
 public:
  MaxPoolWindows(const Node& node, const Value& y)
      : x_shape_(node.inputs[0]->shape()),
        y_shape_(y.shape()),
        kernel_(node.attrs.GetInts("kernel")),
        stride_(node.attrs.GetInts("stride")),
        padding_(node.attrs.GetInts("padding")),
        x_(x_shape_, node.inputs[0]->layout),
        y_(y_shape_, y.layout) {}

  // visit(y offset, x offset of the maximum, the maximum) for every window.
  template <typename Visit>
  void ForEach(const float* x, Visit visit) const {
    for (int64_t n = 0; n < x_shape_[0]; ++n) {
      for (int64_t c = 0; c < x_shape_[1]; ++c) {
        for (int64_t oy = 0; oy < y_shape_[2]; ++oy) {
          for (int64_t ox = 0; ox < y_shape_[3]; ++ox) {
            int64_t best = -1;
            float max = -std::numeric_limits<float>::infinity();
            for (int64_t ky = 0; ky < kernel_[0]; ++ky) {
              const int64_t iy = oy * stride_[0] - padding_[0] + ky;
              if (iy < 0 || iy >= x_shape_[2]) continue;
              for (int64_t kx = 0; kx < kernel_[1]; ++kx) {
                const int64_t ix = ox * stride_[1] - padding_[1] + kx;
                if (ix < 0 || ix >= x_shape_[3]) continue;
                const int64_t at = x_(n, c, iy, ix);
                if (best < 0 || x[at] > max) {
                  best = at;
                  max = x[at];
                }
              }
            }
            visit(y_(n, c, oy, ox), best, max);
          }
        }
      }
    }
  }

 private:
  Shape x_shape_, y_shape_;
  std::vector<int64_t> kernel_, stride_, padding_;
  ActivationIndex x_, y_;
};

class MaxPoolKernel : public Kernel {
 public:
  explicit MaxPoolKernel(const Node& node) : windows_(node, *node.output()) {}
  absl::Status Run(const KernelIO& io) override {
    float* y = io.outputs[0].data<float>();       // (N, C, OH, OW)
    windows_.ForEach(io.inputs[0].data<float>(),  // x (N, C, H, W)
                     [&](int64_t at, int64_t, float max) { y[at] = max; });
    return absl::OkStatus();
  }

 private:
  MaxPoolWindows windows_;
};

// Each window's gradient goes to its first maximum, as the CPU's MaxPoolGrad does.
class MaxPoolGradKernel : public Kernel {
 public:
  explicit MaxPoolGradKernel(const Node& node) : windows_(node, *node.inputs[1]) {}
  absl::Status Run(const KernelIO& io) override {
    const float* dy = io.inputs[1].data<float>();  // (N, C, OH, OW)
    float* dx = io.outputs[0].data<float>();       // (N, C, H, W), x's layout
    std::fill(dx, dx + io.outputs[0].numel(), 0.0f);
    windows_.ForEach(io.inputs[0].data<float>(),  // x (N, C, H, W)
                     [&](int64_t at, int64_t best, float) { dx[best] += dy[at]; });
    return absl::OkStatus();
  }

 private:
  MaxPoolWindows windows_;
};

REGISTER_KERNEL({.op = "MaxPool",
                 .device = kTestDeviceType,
                 .create = MakeFactory<MaxPoolKernel>(),
                 .layouts = BlockedWhereEligible});
REGISTER_KERNEL({.op = "MaxPoolGrad",
                 .device = kTestDeviceType,
                 .create = MakeFactory<MaxPoolGradKernel>(),
                 .layouts = BlockedWhereEligible});

}  // namespace
}  // namespace lockstep::test_backend
