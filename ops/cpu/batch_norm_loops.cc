#include "ops/cpu/batch_norm_loops.h"

#include <array>
#include <string>
#include <type_traits>
#include <utility>

#include "core/half.h"
#include "ops/batch_norm_math.h"
#include "ops/cpu/convert_floats.h"
#include "ops/cpu/cpu_layouts.h"
#include "ops/cpu/vector_loop.h"

// The loops' bodies are lambdas: inlined into ParallelFor's per-ISA loops, they are compiled
// for that ISA and vectorized there; GCC would keep the larger ones as baseline calls.
#define LS_ALWAYS_INLINE __attribute__((always_inline))

namespace lockstep::cpu {
namespace {

// The activations as rows of one sample and channel block, row r at r * length: a plain
// (N, C, H, W) row is one channel's H * W values, an nChw8c or nChw16c row H * W vectors of
// `block` channels, so element j of row r is of channel FirstChannel(r) + j % block.
struct Rows {
  int64_t count = 0;
  int64_t length = 0;
  int64_t channels = 0;
  int block = 1;

  int64_t FirstChannel(int64_t r) const { return r % (channels / block) * block; }
  double PerChannel() const { return static_cast<double>(count * length / channels); }
  // Floats of the rows' partial sums: two per channel of each row.
  int64_t SumFloats() const { return 2 * block * count; }
};

Rows RowsOf(const Value& x) {
  const Shape& shape = x.shape();
  const int block = ChannelBlock(x.layout);
  const int64_t count = shape[0] * shape[1] / block;
  return {count, NumElements(shape) / count, shape[1], block};
}

// fn(bool_constant<kRelu>) for whether the node fuses the ReLU, a constant of the loops.
template <typename Fn>
void WithRelu(bool relu, const Fn& fn) {
  if (relu) {
    fn(std::true_type());
  } else {
    fn(std::false_type());
  }
}

// Rows go in chunks of kChunk elements, a multiple of every channel block and vector width, whose
// position p is of channel FirstChannel(r) + p % block in every chunk of row r: the loops read
// per-channel values from arrays by position (Pattern), contiguous in every layout, so GCC
// vectorizes them as plain loops.
constexpr int kChunk = 64;

// The values of the (C) vectors `per_channel` at each position of a chunk of row r.
template <size_t N>
struct Pattern {
  Pattern(const Rows& rows, int64_t r, const std::array<const float*, N>& per_channel) {
    const int64_t c0 = rows.FirstChannel(r);
    for (size_t v = 0; v < N; ++v) {
      for (int p = 0; p < kChunk; ++p) values[v][p] = per_channel[v][c0 + p % rows.block];
    }
  }
  const float* operator[](size_t v) const { return values[v].data(); }
  std::array<std::array<float, kChunk>, N> values;
};

// fn(i, p) for each element i of row r, at position p of its chunk.
template <typename Fn>
[[gnu::always_inline]] inline void ForRow(const Rows& rows, int64_t r, const Fn& fn) {
  const int64_t begin = r * rows.length, end = begin + rows.length;
  int64_t at = begin;
  for (; at + kChunk <= end; at += kChunk) {
    for (int p = 0; p < kChunk; ++p) fn(at + p, p);
  }
  const int tail = static_cast<int>(end - at);
  for (int p = 0; p < tail; ++p) fn(at + p, p);
}

// Each row's sums of the pairs fn(i, p, pattern) gives for its elements (pattern: the row's
// Pattern of `per_channel`), per channel of the row: `block` first sums then `block` second ones
// at sums + 2 * block * r.
template <size_t N, typename Fn>
void RowSums(const Rows& rows, const std::array<const float*, N>& per_channel, float* sums,
             const Fn& fn) {
  ParallelFor(rows.count, [&](int64_t r) LS_ALWAYS_INLINE {
    const Pattern<N> pattern(rows, r, per_channel);
    float first[kChunk] = {}, second[kChunk] = {};
    ForRow(rows, r, [&](int64_t i, int p) LS_ALWAYS_INLINE {
      const auto [a, b] = fn(i, p, pattern);
      first[p] += a;
      second[p] += b;
    });
    float* out = sums + 2 * rows.block * r;
    for (int k = 0; k < 2 * rows.block; ++k) out[k] = 0.0f;
    for (int p = 0; p < kChunk; ++p) {
      out[p % rows.block] += first[p];
      out[rows.block + p % rows.block] += second[p];
    }
  });
}

// fn(c, first, second) with channel c's totals over the rows' sums, in double.
template <typename Fn>
void ChannelTotals(const Rows& rows, const float* sums, const Fn& fn) {
  const int64_t blocks = rows.channels / rows.block;
  for (int64_t c = 0; c < rows.channels; ++c) {
    const int k = static_cast<int>(c % rows.block);
    double first = 0.0, second = 0.0;
    for (int64_t r = c / rows.block; r < rows.count; r += blocks) {
      first += sums[2 * rows.block * r + k];
      second += sums[2 * rows.block * r + rows.block + k];
    }
    fn(c, first, second);
  }
}

// y = x * scale + shift per channel; with kRelu, the ReLU too and its mask.
template <bool kRelu, typename T>
void Normalize(const Rows& rows, const T* x, const float* scale, const float* shift, T* y,
               uint8_t* mask) {
  ParallelFor(rows.count, [&](int64_t r) LS_ALWAYS_INLINE {
    const Pattern<2> pattern(rows, r, {scale, shift});
    const float* s = pattern[0];
    const float* t = pattern[1];
    // Copies the mask's byte stores cannot alias, unlike the captured pointers.
    const T* in = x;
    T* out = y;
    uint8_t* passes = mask;
    ForRow(rows, r, [&](int64_t i, int p) LS_ALWAYS_INLINE {
      float v = ToFloat(in[i]) * s[p] + t[p];
      if constexpr (kRelu) {
        const uint8_t m = math::ReluMask(v);
        passes[i] = m;
        v = math::Masked(v, m);
      }
      out[i] = FloatTo<T>(v);
    });
  });
}

// scale[c] = gamma * inv_std and shift[c] = beta - mean * scale[c], where scale and shift held
// gamma and beta.
void FoldStatistics(int64_t c, float mean, float var, float epsilon, float* scale, float* shift) {
  scale[c] *= math::InvStdFromVariance(var, epsilon);
  shift[c] -= mean * scale[c];
}

float Epsilon(const Node& node) { return static_cast<float>(node.attrs.GetFloat("epsilon")); }
bool FusesRelu(const Node& node) { return node.op->name().starts_with("BatchNormRelu"); }

uint8_t* Mask(const Tensor& tensor) { return static_cast<uint8_t*>(tensor.raw_data()); }

// (x, gamma, beta, running_mean, running_var) -> (y, mean, var, running_mean', running_var'
// [, mask]): the batch statistics, then the normalization.
template <typename T>
class TrainingKernel : public Kernel {
 public:
  explicit TrainingKernel(const Node& node)
      : rows_(RowsOf(*node.inputs[0])),
        epsilon_(Epsilon(node)),
        relu_(FusesRelu(node)),
        running_(node) {}
  // The rows' sums, then the (C) scale and shift.
  size_t WorkspaceBytes() const override {
    return (rows_.SumFloats() + 2 * rows_.channels) * sizeof(float);
  }

  absl::Status Run(const KernelIO& io) override {
    const T* x = io.inputs[0].data<T>();  // (N, C, ...)
    float* sums = static_cast<float*>(io.workspace);
    float* scale = sums + rows_.SumFloats();  // (C)
    float* shift = scale + rows_.channels;    // (C)
    float* mean = io.outputs[1].data<float>();
    float* var = io.outputs[2].data<float>();  // biased
    const int64_t channels = rows_.channels;
    ConvertFloats(io.inputs[1].raw_data(), io.inputs[1].dtype(), scale, DType::kF32, channels);
    ConvertFloats(io.inputs[2].raw_data(), io.inputs[2].dtype(), shift, DType::kF32, channels);
    RowSums<0>(rows_, {}, sums, [&](int64_t i, int, const Pattern<0>&) LS_ALWAYS_INLINE {
      const float v = ToFloat(x[i]);
      return std::pair{v, v * v};
    });
    const double count = rows_.PerChannel();
    ChannelTotals(rows_, sums, [&](int64_t c, double sum, double squares) {
      mean[c] = math::ChannelMean(sum, count);
      var[c] = math::BiasedVariance(sum, squares, count);
      FoldStatistics(c, mean[c], var[c], epsilon_, scale, shift);
    });
    WithRelu(relu_, [&](auto relu) {
      Normalize<decltype(relu)::value>(rows_, x, scale, shift, io.outputs[0].data<T>(),
                                       relu_ ? Mask(io.outputs[5]) : nullptr);
    });
    running_.Update(io);
    return absl::OkStatus();
  }

 private:
  Rows rows_;
  float epsilon_;
  bool relu_;
  RunningStatistics running_;
};

// (x, gamma, saved_mean, saved_var, dy [, mask]) -> (dx, dgamma, dbeta): the channels' sums of
// dy and dy * x_hat (dbeta and dgamma), then dx.
template <typename T>
class GradKernel : public Kernel {
 public:
  explicit GradKernel(const Node& node)
      : rows_(RowsOf(*node.inputs[0])), epsilon_(Epsilon(node)), relu_(FusesRelu(node)) {}
  // The rows' sums, then six (C) vectors.
  size_t WorkspaceBytes() const override {
    return (rows_.SumFloats() + 6 * rows_.channels) * sizeof(float);
  }

  absl::Status Run(const KernelIO& io) override {
    const T* x = io.inputs[0].data<T>();             // (N, C, ...)
    const float* mean = io.inputs[2].data<float>();  // (C) saved
    const float* var = io.inputs[3].data<float>();   // (C) saved, biased
    const T* dy = io.inputs[4].data<T>();            // (N, C, ...)
    const uint8_t* mask = relu_ ? Mask(io.inputs[5]) : nullptr;
    T* dx = io.outputs[0].data<T>();
    const int64_t channels = rows_.channels;
    float* sums = static_cast<float*>(io.workspace);
    float* inv_std = sums + rows_.SumFloats();
    float* gamma_inv_std = inv_std + channels;
    float* mean_dy = gamma_inv_std + channels;
    float* mean_dy_x_hat = mean_dy + channels;
    float* dgamma = mean_dy_x_hat + channels;
    float* dbeta = dgamma + channels;
    ConvertFloats(io.inputs[1].raw_data(), io.inputs[1].dtype(), gamma_inv_std, DType::kF32,
                  channels);
    for (int64_t c = 0; c < channels; ++c) {
      inv_std[c] = math::InvStdFromVariance(var[c], epsilon_);
      gamma_inv_std[c] *= inv_std[c];
    }
    WithRelu(relu_, [&](auto relu) {
      // dy through the fused ReLU.
      auto dy_at = [&](int64_t i) LS_ALWAYS_INLINE {
        if constexpr (decltype(relu)::value) return math::Masked(ToFloat(dy[i]), mask[i]);
        return ToFloat(dy[i]);
      };
      RowSums<2>(
          rows_, {mean, inv_std}, sums,
          [&](int64_t i, int p, const Pattern<2>& channel) LS_ALWAYS_INLINE {
            const float d = dy_at(i);
            return std::pair{d, d * math::NormXHat(ToFloat(x[i]), channel[0][p], channel[1][p])};
          });
      const double count = rows_.PerChannel();
      ChannelTotals(rows_, sums, [&](int64_t c, double sum_dy, double sum_dy_x_hat) {
        dbeta[c] = static_cast<float>(sum_dy);
        dgamma[c] = static_cast<float>(sum_dy_x_hat);
        mean_dy[c] = static_cast<float>(sum_dy / count);
        mean_dy_x_hat[c] = static_cast<float>(sum_dy_x_hat / count);
      });
      ParallelFor(rows_.count, [&](int64_t r) LS_ALWAYS_INLINE {
        const Pattern<5> channel(rows_, r, {mean, inv_std, gamma_inv_std, mean_dy, mean_dy_x_hat});
        const float *m = channel[0], *s = channel[1], *g = channel[2], *d = channel[3],
                    *dx_hat = channel[4];
        ForRow(rows_, r, [&](int64_t i, int p) LS_ALWAYS_INLINE {
          const float x_hat = math::NormXHat(ToFloat(x[i]), m[p], s[p]);
          dx[i] = FloatTo<T>(math::NormInputGrad(dy_at(i), x_hat, g[p], d[p], dx_hat[p]));
        });
      });
    });
    ConvertFloats(dgamma, DType::kF32, io.outputs[1].raw_data(), io.outputs[1].dtype(), channels);
    ConvertFloats(dbeta, DType::kF32, io.outputs[2].raw_data(), io.outputs[2].dtype(), channels);
    return absl::OkStatus();
  }

 private:
  Rows rows_;
  float epsilon_;
  bool relu_;
};

// (x, gamma, beta, mean, var) -> y with the running statistics.
template <typename T>
class InferenceKernel : public Kernel {
 public:
  explicit InferenceKernel(const Node& node)
      : rows_(RowsOf(*node.inputs[0])), epsilon_(Epsilon(node)) {}
  // The (C) scale and shift.
  size_t WorkspaceBytes() const override { return 2 * rows_.channels * sizeof(float); }

  absl::Status Run(const KernelIO& io) override {
    const int64_t channels = rows_.channels;
    float* scale = static_cast<float*>(io.workspace);
    float* shift = scale + channels;
    ConvertFloats(io.inputs[1].raw_data(), io.inputs[1].dtype(), scale, DType::kF32, channels);
    ConvertFloats(io.inputs[2].raw_data(), io.inputs[2].dtype(), shift, DType::kF32, channels);
    const float* mean = io.inputs[3].data<float>();
    const float* var = io.inputs[4].data<float>();
    for (int64_t c = 0; c < channels; ++c) {
      FoldStatistics(c, mean[c], var[c], epsilon_, scale, shift);
    }
    Normalize<false>(rows_, io.inputs[0].data<T>(), scale, shift, io.outputs[0].data<T>(), nullptr);
    return absl::OkStatus();
  }

 private:
  Rows rows_;
  float epsilon_;
};

template <typename T>
absl::StatusOr<std::unique_ptr<Kernel>> MakeKernel(const Node& node) {
  const std::string& op = node.op->name();
  if (op == "BatchNorm" || op == "BatchNormRelu") return std::make_unique<TrainingKernel<T>>(node);
  if (op == "BatchNormGrad" || op == "BatchNormReluGrad") {
    return std::make_unique<GradKernel<T>>(node);
  }
  if (op == "BatchNormInference") return std::make_unique<InferenceKernel<T>>(node);
  return absl::InvalidArgumentError(absl::StrCat("no own batch-norm loop for ", node.Describe()));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> MakeBatchNormLoops(const Node& node) {
  switch (node.inputs[0]->dtype()) {
    case DType::kBF16:
      return MakeKernel<BFloat16>(node);
    case DType::kF16:
      return MakeKernel<Float16>(node);
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("the own batch-norm loops take bf16 or f16 x, ", node.Describe(), " has ",
                       DTypeName(node.inputs[0]->dtype())));
  }
}

RunningStatistics::RunningStatistics(const Node& node)
    : channels_(node.inputs[0]->shape()[1]),
      per_channel_(static_cast<double>(NumElements(node.inputs[0]->shape()) / channels_)),
      momentum_(static_cast<float>(node.attrs.GetFloat("momentum"))) {}

void RunningStatistics::Update(const KernelIO& io) const {
  const float* mean = io.outputs[1].data<float>();    // (C) batch mean
  const float* var = io.outputs[2].data<float>();     // (C) biased batch variance
  float* running_mean = io.outputs[3].data<float>();  // (C) in place of input 3
  float* running_var = io.outputs[4].data<float>();   // (C) in place of input 4
  for (int64_t c = 0; c < channels_; ++c) {
    math::UpdateRunningStatistics(mean[c], var[c], per_channel_, momentum_, &running_mean[c],
                                  &running_var[c]);
  }
}

}  // namespace lockstep::cpu
