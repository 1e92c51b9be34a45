// Softmax cross-entropy, its gradient, ArgMax and AccuracyCount: plain OpenMP loops over rows.

#include "ops/cpu/loss.h"

#include "graph/kernel.h"
#include "ops/kernel_shapes.h"
#include "ops/loss_math.h"
#include "ops/kernel_bases.h"

namespace lockstep {
namespace {

// A bad label would index outside the row: fail instead.
absl::Status CheckLabels(const char* op, const int32_t* labels, const Rows& rows) {
  for (int64_t i = 0; i < rows.n; ++i) {
    if (!math::LabelInRange(labels[i], rows.classes)) {
      return absl::InvalidArgumentError(absl::StrCat(op, " labels must be in [0, ", rows.classes,
                                                     "): sample ", i, " has label ", labels[i]));
    }
  }
  return absl::OkStatus();
}

// Writes softmax(x) into probs and returns -log softmax(x)[label]: the row as one share.
double SoftmaxRow(const float* x, int64_t classes, int32_t label, float* probs) {
  const math::RowShare row;
  const float max = math::ShareMax(x, classes, row);
  const double sum = math::ShareExpSum(x, classes, max, row, probs);
  math::ShareNormalize(probs, classes, sum, row);
  return math::RowCrossEntropy(x, classes, label, max, sum);
}

// The first index of the row's maximum.
int64_t RowArgMax(const float* row, int64_t classes) {
  return math::ShareArgMax(row, classes, math::RowShare()).index;
}

class ArgMaxKernel : public RowsKernel {
 public:
  using RowsKernel::RowsKernel;
  absl::Status Run(const KernelIO& io) override {
    const float* x = io.inputs[0].data<float>();     // (N, C)
    int32_t* index = io.outputs[0].data<int32_t>();  // (N)
    const int64_t c = rows_.classes;
#pragma omp parallel for
    for (int64_t i = 0; i < rows_.n; ++i) index[i] = static_cast<int32_t>(RowArgMax(x + i * c, c));
    return absl::OkStatus();
  }
};

class AccuracyCountKernel : public RowsKernel {
 public:
  using RowsKernel::RowsKernel;
  absl::Status Run(const KernelIO& io) override {
    const float* logits = io.inputs[0].data<float>();      // (N, C)
    const int32_t* labels = io.inputs[1].data<int32_t>();  // (N)
    int32_t* count = io.outputs[0].data<int32_t>();        // []
    const int64_t c = rows_.classes;
    int32_t correct = 0;
#pragma omp parallel for reduction(+ : correct)
    for (int64_t i = 0; i < rows_.n; ++i) correct += RowArgMax(logits + i * c, c) == labels[i];
    *count = correct;
    return absl::OkStatus();
  }
};

}  // namespace

absl::Status cpu::SoftmaxCrossEntropyKernel::Run(const KernelIO& io) {
  const float* logits = io.inputs[0].data<float>();      // (N, C)
  const int32_t* labels = io.inputs[1].data<int32_t>();  // (N)
  float* loss = io.outputs[0].data<float>();             // []
  float* probs = io.outputs[1].data<float>();            // (N, C)
  LS_RETURN_IF_ERROR(CheckLabels("SoftmaxCrossEntropy", labels, rows_));
  const int64_t c = rows_.classes;
  double total = 0.0;
#pragma omp parallel for reduction(+ : total)
  for (int64_t i = 0; i < rows_.n; ++i) {
    total += SoftmaxRow(logits + i * c, c, labels[i], probs + i * c);
  }
  *loss = math::MeanLoss(total, rows_.n);
  return absl::OkStatus();
}

absl::Status cpu::SoftmaxCrossEntropyGradKernel::Run(const KernelIO& io) {
  const float* probs = io.inputs[0].data<float>();       // (N, C)
  const int32_t* labels = io.inputs[1].data<int32_t>();  // (N)
  const float* dloss = io.inputs[2].data<float>();       // []
  float* dlogits = io.outputs[0].data<float>();          // (N, C)
  LS_RETURN_IF_ERROR(CheckLabels("SoftmaxCrossEntropyGrad", labels, rows_));
  const int64_t c = rows_.classes;
  const float scale = math::CrossEntropyGradScale(*dloss, rows_.n);
#pragma omp parallel for
  for (int64_t i = 0; i < rows_.n; ++i) {
    for (int64_t j = 0; j < c; ++j) {
      dlogits[i * c + j] = math::CrossEntropyGrad(probs[i * c + j], j, labels[i], c, scale);
    }
  }
  return absl::OkStatus();
}

REGISTER_KERNEL({.op = "SoftmaxCrossEntropy",
                 .create = MakeFactory<cpu::SoftmaxCrossEntropyKernel>()});
REGISTER_KERNEL({.op = "SoftmaxCrossEntropyGrad",
                 .create = MakeFactory<cpu::SoftmaxCrossEntropyGradKernel>()});
REGISTER_KERNEL({.op = "ArgMax", .create = MakeFactory<ArgMaxKernel>()});
REGISTER_KERNEL({.op = "AccuracyCount", .create = MakeFactory<AccuracyCountKernel>()});

}  // namespace lockstep
