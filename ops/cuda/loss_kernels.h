#pragma once

// Launchers of the loss and metric CUDA kernels (ops/cuda/loss.cu). Each queues its work on
// `stream` and returns the launch's error; pointers are device memory. Rows are reduced by one
// block each and batch totals by a single block, so results do not vary from run to run.

#include <cuda_runtime.h>

#include <cstdint>

namespace lockstep::cuda {

// probs = softmax(logits) per row and loss = the mean of -log probs[label]. row_loss is scratch
// for the rows' losses before the mean. A label outside [0, classes) makes the loss NaN.
cudaError_t LaunchSoftmaxCrossEntropy(const float* logits,    // (rows, classes)
                                      const int32_t* labels,  // (rows)
                                      int64_t rows, int64_t classes,
                                      float* probs,      // (rows, classes)
                                      double* row_loss,  // (rows), scratch
                                      float* loss,       // []
                                      cudaStream_t stream);

// dlogits = (probs - onehot(labels)) * dloss / rows; NaN rows for labels out of range.
cudaError_t LaunchSoftmaxCrossEntropyGrad(const float* probs,     // (rows, classes)
                                          const int32_t* labels,  // (rows)
                                          const float* dloss,     // []
                                          int64_t rows, int64_t classes,
                                          float* dlogits,  // (rows, classes)
                                          cudaStream_t stream);

// The first index of each row's maximum.
cudaError_t LaunchArgMax(const float* x,  // (rows, classes)
                         int64_t rows, int64_t classes,
                         int32_t* index,  // (rows)
                         cudaStream_t stream);

// The number of rows whose ArgMax is the label; the ArgMax goes through `index` scratch.
cudaError_t LaunchAccuracyCount(const float* logits,    // (rows, classes)
                                const int32_t* labels,  // (rows)
                                int64_t rows, int64_t classes,
                                int32_t* index,  // (rows), scratch
                                int32_t* count,  // []
                                cudaStream_t stream);

}  // namespace lockstep::cuda
