#pragma once

// What the data-parallel tests share: a small LeNet on generated shape images, global batches
// that ranks split by rows, and the comparison of two models' parameters.

#include <cstdint>
#include <vector>

#include "train/model.h"

namespace lockstep::testing {

inline constexpr int64_t kImageSize = 16;

// This process alone as a parallel context (parallel::Init without MPI), made once.
const parallel::Context& WorldOfOne();

// LeNet-5 (4 classes, 1 channel, 16x16), Momentum(0.05, 0.9, weight decay 1e-4). The options'
// batch size is the per-rank (or per-micro-batch) batch.
train::Model MakeLeNet(train::ModelOptions options);
// Two conv (+ BatchNorm2d) + ReLU stages (16 and 32 channels: conv2's weights are kept in the
// blocked weight layout), global pooling and a dense layer, with the same optimizer.
train::Model MakeConvNet(train::ModelOptions options, bool batch_norm);

// `steps` batches of `global_batch` shape images, the same on every rank.
std::vector<train::Batch> GlobalBatches(int steps, int64_t global_batch);

// Trains one step per global batch on rows [first, first + rows) of it, given to the model in
// micro-batches of the model's batch size (so rows / batch_size of them per step).
absl::Status TrainOnRows(train::Model& model, const std::vector<train::Batch>& batches,
                         int64_t first, int64_t rows);

// The largest over parameters and state of max|a - b| / max|b|.
double MaxRelativeDifference(const train::Model& a, const train::Model& b);

}  // namespace lockstep::testing
