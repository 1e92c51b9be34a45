// SyncBatchNorm kernels: batch normalization with statistics over the whole global batch.
// Each rank sums its part per channel (in double), one AllReduce of those sums through the
// group's queue gives every rank the same mean and variance, and the backward does the same for
// the two sums its input gradient needs. Plain loops over the plain or channel-blocked layout
// of x, so they sit between oneDNN nodes without reorders. The per-channel and per-element
// formulas are ops/batch_norm_math.h's, which the CUDA twin runs too.

#include <vector>

#include "core/tensor.h"
#include "graph/kernel.h"
#include "ops/batch_norm_math.h"
#include "ops/cpu/cpu_layouts.h"
#include "parallel/comm_group.h"

namespace lockstep::parallel {
namespace {

// Where channel c of sample n at pixel p is, in x's layout: x is (N, C, P) with channels in
// blocks of `block` (1 for plain), the block index outermost after n.
struct ChannelLayout {
  int64_t n, channels, pixels, block;

  explicit ChannelLayout(const Value& x)
      : n(x.shape()[0]),
        channels(x.shape()[1]),
        pixels(NumElements(x.shape()) / (x.shape()[0] * x.shape()[1])),
        block(cpu::ChannelBlock(x.layout)) {}
  // Calls fn(c, i) for every element i of channel block `cb`.
  template <typename Fn>
  void ForEachInBlock(int64_t cb, Fn fn) const {
    for (int64_t s = 0; s < n; ++s) {
      const int64_t base = ((s * (channels / block) + cb) * pixels) * block;
      for (int64_t p = 0; p < pixels; ++p) {
        for (int64_t k = 0; k < block; ++k) fn(cb * block + k, base + p * block + k);
      }
    }
  }
  int64_t blocks() const { return channels / block; }
  int64_t per_channel() const { return n * pixels; }
};

// Sums two per-channel quantities over this rank's elements into sums[0, C) and sums[C, 2C).
template <typename First, typename Second>
void ChannelSums(const ChannelLayout& layout, double* sums, First first, Second second) {
  const int64_t c_total = layout.channels;
#pragma omp parallel for schedule(static)
  for (int64_t cb = 0; cb < layout.blocks(); ++cb) {
    for (int64_t k = 0; k < layout.block; ++k) {
      sums[cb * layout.block + k] = 0.0;
      sums[c_total + cb * layout.block + k] = 0.0;
    }
    layout.ForEachInBlock(cb, [&](int64_t c, int64_t i) {
      sums[c] += first(c, i);
      sums[c_total + c] += second(c, i);
    });
  }
}

// The base of both kernels: the layout, the group, and the (2C) f64 buffer of sums.
class SyncKernel : public Kernel {
 public:
  bool communicates() const override { return true; }

 protected:
  SyncKernel(const Node& node, CommGroup* group)
      : layout_(*node.inputs[0]),
        epsilon_(static_cast<float>(node.attrs.GetFloat("epsilon"))),
        group_(group),
        label_(node.Describe()),
        sums_(Tensor::Empty({2 * layout_.channels}, DType::kF64)) {}

  // Adds every rank's sums into sums_; the element count becomes the global one.
  absl::Status AllReduceSums(double* count) {
    *count = static_cast<double>(layout_.per_channel() * group_->communicator->size());
    return group_->RunNow(
        label_, [this] { return group_->communicator->AllReduce(sums_, ReduceOp::kSum); });
  }

  ChannelLayout layout_;
  float epsilon_;
  CommGroup* group_;
  std::string label_;
  Tensor sums_;  // (2C) f64
};

// (x, gamma, beta, running_mean, running_var) -> (y, mean, var, running_mean', running_var').
class SyncBatchNormKernel : public SyncKernel {
 public:
  SyncBatchNormKernel(const Node& node, CommGroup* group)
      : SyncKernel(node, group),
        momentum_(static_cast<float>(node.attrs.GetFloat("momentum"))),
        scale_(static_cast<size_t>(layout_.channels)) {}

  absl::Status Run(const KernelIO& io) override {
    const float* x = io.inputs[0].data<float>();  // (N, C, H, W) in x's layout
    const int64_t c_total = layout_.channels;
    double* sums = sums_.data<double>();
    ChannelSums(
        layout_, sums, [&](int64_t, int64_t i) { return double{x[i]}; },
        [&](int64_t, int64_t i) { return double{x[i]} * x[i]; });
    double count = 0.0;
    LS_RETURN_IF_ERROR(AllReduceSums(&count));
    const float* gamma = io.inputs[1].data<float>();    // (C)
    const float* beta = io.inputs[2].data<float>();     // (C)
    float* mean = io.outputs[1].data<float>();          // (C)
    float* var = io.outputs[2].data<float>();           // (C) biased
    float* running_mean = io.outputs[3].data<float>();  // (C) in place
    float* running_var = io.outputs[4].data<float>();   // (C) in place
    float* scale = scale_.data();
    for (int64_t c = 0; c < c_total; ++c) {
      mean[c] = math::ChannelMean(sums[c], count);
      var[c] = math::BiasedVariance(sums[c], sums[c_total + c], count);
      math::UpdateRunningStatistics(mean[c], var[c], count, momentum_, &running_mean[c],
                                    &running_var[c]);
      scale[c] = gamma[c] * math::InvStdFromVariance(var[c], epsilon_);
    }
    float* y = io.outputs[0].data<float>();  // (N, C, H, W) in x's layout
#pragma omp parallel for schedule(static)
    for (int64_t cb = 0; cb < layout_.blocks(); ++cb) {
      layout_.ForEachInBlock(cb, [&](int64_t c, int64_t i) {
        y[i] = math::NormOutput(x[i], mean[c], scale[c], beta[c]);
      });
    }
    return absl::OkStatus();
  }

 private:
  float momentum_;
  std::vector<float> scale_;  // (C) gamma * inv_std
};

// (x, gamma, mean, var, dy) -> (dx, dgamma, dbeta). dgamma and dbeta are this rank's part
// (the gradient AllReduce adds the ranks' parts like any other gradient); dx needs the global
// sums of dy and dy * x_hat, since every rank's x moved the shared statistics.
class SyncBatchNormGradKernel : public SyncKernel {
 public:
  SyncBatchNormGradKernel(const Node& node, CommGroup* group)
      : SyncKernel(node, group), inv_std_(static_cast<size_t>(layout_.channels)) {}

  absl::Status Run(const KernelIO& io) override {
    const float* x = io.inputs[0].data<float>();      // (N, C, H, W) in x's layout
    const float* gamma = io.inputs[1].data<float>();  // (C)
    const float* mean = io.inputs[2].data<float>();   // (C)
    const float* var = io.inputs[3].data<float>();    // (C)
    const float* dy = io.inputs[4].data<float>();     // like x
    const int64_t c_total = layout_.channels;
    float* inv_std = inv_std_.data();
    for (int64_t c = 0; c < c_total; ++c) inv_std[c] = math::InvStdFromVariance(var[c], epsilon_);
    double* sums = sums_.data<double>();
    ChannelSums(
        layout_, sums, [&](int64_t, int64_t i) { return double{dy[i]}; },
        [&](int64_t c, int64_t i) {
          return double{dy[i]} * math::NormXHat(x[i], mean[c], inv_std[c]);
        });
    float* dgamma = io.outputs[1].data<float>();  // (C)
    float* dbeta = io.outputs[2].data<float>();   // (C)
    for (int64_t c = 0; c < c_total; ++c) {
      dbeta[c] = static_cast<float>(sums[c]);
      dgamma[c] = static_cast<float>(sums[c_total + c]);
    }
    double count = 0.0;
    LS_RETURN_IF_ERROR(AllReduceSums(&count));
    // The global sums become means (in double, see NormInputGrad): sums[c] of dy, sums[C + c] of
    // dy * x_hat.
    for (int64_t k = 0; k < 2 * c_total; ++k) sums[k] /= count;
    float* dx = io.outputs[0].data<float>();  // like x
#pragma omp parallel for schedule(static)
    for (int64_t cb = 0; cb < layout_.blocks(); ++cb) {
      layout_.ForEachInBlock(cb, [&](int64_t c, int64_t i) {
        dx[i] = static_cast<float>(
            math::NormInputGrad<double>(dy[i], math::NormXHat(x[i], mean[c], inv_std[c]),
                                        gamma[c] * inv_std[c], sums[c], sums[c_total + c]));
      });
    }
    return absl::OkStatus();
  }

 private:
  std::vector<float> inv_std_;  // (C)
};

template <typename K>
KernelFactory SyncFactory() {
  return [](const Node& node, const KernelContext& ctx) -> absl::StatusOr<std::unique_ptr<Kernel>> {
    LS_ASSIGN_OR_RETURN(CommGroup * group, GroupFor(node, ctx));
    return std::make_unique<K>(node, group);
  };
}

REGISTER_KERNEL({.op = "SyncBatchNorm",
                 .create = SyncFactory<SyncBatchNormKernel>(),
                 .layouts = BlockedWhereEligible});
REGISTER_KERNEL({.op = "SyncBatchNormGrad",
                 .create = SyncFactory<SyncBatchNormGradKernel>(),
                 .layouts = BlockedWhereEligible});

}  // namespace
}  // namespace lockstep::parallel
