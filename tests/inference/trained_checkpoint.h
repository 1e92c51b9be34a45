#pragma once

// A named model trained for a few steps on a small copy of the built-in sample dataset and saved
// as lockstep-train saves it (ModelCheckpoint: .ckpt and -graph.meta), with Lockstep's own
// evaluation (Model::EvalBatch) of the validation images as the reference for exports.

#include <cstdint>
#include <string>

#include "core/status.h"
#include "core/tensor.h"

namespace lockstep::inference {

struct TrainedCheckpoint {
  std::string ckpt, meta, data;  // data: the ImageFolder root (train/, val/)
  Tensor images;                 // (N, 3, size, size): the validation images, transformed
  Tensor logits;                 // (N, classes): Model::EvalBatch of them
};

// Writes everything under `dir`; the sample data is written once and shared by later calls.
absl::StatusOr<TrainedCheckpoint> TrainAndSave(const std::string& model_name, int64_t image_size,
                                               const std::string& dir);

}  // namespace lockstep::inference
