// Loss and metric CUDA kernels: one block per row for the softmax and ArgMax (the row's
// threads each take a share and combine them with BlockReduce), one block for batch totals.
// The per-row math is in ops/loss_math.h.

#include "ops/cuda/device_loops.cuh"
#include "ops/cuda/loss_kernels.h"
#include "ops/loss_math.h"

namespace lockstep::cuda {
namespace {

struct MaxFn {
  __device__ float operator()(float a, float b) const { return math::MaxOf(a, b); }
};

struct BetterArgMaxFn {
  __device__ math::ArgMaxCandidate operator()(math::ArgMaxCandidate a,
                                              math::ArgMaxCandidate b) const {
    return math::BetterArgMax(a, b);
  }
};

// This thread's share of a row of the block's rows.
__device__ math::RowShare ThreadShare() { return {threadIdx.x, blockDim.x}; }

// Block i: softmax of row i into probs and its loss into row_loss[i].
__global__ void SoftmaxCrossEntropyRows(const float* logits,    // (rows, classes)
                                        const int32_t* labels,  // (rows)
                                        int64_t classes,
                                        float* probs,        // (rows, classes)
                                        double* row_loss) {  // (rows)
  const int64_t row = blockIdx.x;
  const float* x = logits + row * classes;
  float* p = probs + row * classes;
  const float max = BlockReduce(math::ShareMax(x, classes, ThreadShare()), MaxFn{});
  const double sum = BlockReduce(math::ShareExpSum(x, classes, max, ThreadShare(), p), SumOf{});
  math::ShareNormalize(p, classes, sum, ThreadShare());
  if (threadIdx.x == 0) row_loss[row] = math::RowCrossEntropy(x, classes, labels[row], max, sum);
}

// One block: loss = the mean of row_loss.
__global__ void MeanOfRows(const double* row_loss,  // (rows)
                           int64_t rows,
                           float* loss) {  // []
  double total = 0.0;
  for (int64_t i = threadIdx.x; i < rows; i += blockDim.x) total += row_loss[i];
  total = BlockReduce(total, SumOf{});
  if (threadIdx.x == 0) *loss = math::MeanLoss(total, rows);
}

struct SoftmaxCrossEntropyGradFn {
  const float* probs;     // (rows, classes)
  const int32_t* labels;  // (rows)
  const float* dloss;     // []
  int64_t rows, classes;
  float* dlogits;  // (rows, classes)
  __device__ void operator()(int64_t i) const {
    const float scale = math::CrossEntropyGradScale(*dloss, rows);
    dlogits[i] = math::CrossEntropyGrad(probs[i], i % classes, labels[i / classes], classes, scale);
  }
};

// Block i: the first index of row i's maximum.
__global__ void ArgMaxRows(const float* x,  // (rows, classes)
                           int64_t classes,
                           int32_t* index) {  // (rows)
  const int64_t row = blockIdx.x;
  const math::ArgMaxCandidate best =
      BlockReduce(math::ShareArgMax(x + row * classes, classes, ThreadShare()), BetterArgMaxFn{});
  if (threadIdx.x == 0) index[row] = static_cast<int32_t>(best.index);
}

// One block: count = the number of rows with index == label.
__global__ void CountEqual(const int32_t* index,   // (rows)
                           const int32_t* labels,  // (rows)
                           int64_t rows,
                           int32_t* count) {  // []
  int32_t equal = 0;
  for (int64_t i = threadIdx.x; i < rows; i += blockDim.x) equal += index[i] == labels[i];
  equal = BlockReduce(equal, SumOf{});
  if (threadIdx.x == 0) *count = equal;
}

}  // namespace

cudaError_t LaunchSoftmaxCrossEntropy(const float* logits, const int32_t* labels, int64_t rows,
                                      int64_t classes, float* probs, double* row_loss, float* loss,
                                      cudaStream_t stream) {
  if (rows > 0) {
    SoftmaxCrossEntropyRows<<<static_cast<unsigned>(rows), kThreadsPerBlock, 0, stream>>>(
        logits, labels, classes, probs, row_loss);
  }
  MeanOfRows<<<1, kThreadsPerBlock, 0, stream>>>(row_loss, rows, loss);
  return cudaGetLastError();
}

cudaError_t LaunchSoftmaxCrossEntropyGrad(const float* probs, const int32_t* labels,
                                          const float* dloss, int64_t rows, int64_t classes,
                                          float* dlogits, cudaStream_t stream) {
  return ForEachIndex(rows * classes, stream,
                      SoftmaxCrossEntropyGradFn{probs, labels, dloss, rows, classes, dlogits});
}

cudaError_t LaunchArgMax(const float* x, int64_t rows, int64_t classes, int32_t* index,
                         cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  ArgMaxRows<<<static_cast<unsigned>(rows), kThreadsPerBlock, 0, stream>>>(x, classes, index);
  return cudaGetLastError();
}

cudaError_t LaunchAccuracyCount(const float* logits, const int32_t* labels, int64_t rows,
                                int64_t classes, int32_t* index, int32_t* count,
                                cudaStream_t stream) {
  const cudaError_t argmax = LaunchArgMax(logits, rows, classes, index, stream);
  if (argmax != cudaSuccess) return argmax;
  CountEqual<<<1, kThreadsPerBlock, 0, stream>>>(index, labels, rows, count);
  return cudaGetLastError();
}

}  // namespace lockstep::cuda
