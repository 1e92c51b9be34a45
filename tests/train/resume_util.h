#pragma once

// Helpers of the pipeline and checkpoint tests: a tiny copy of the built-in sample dataset on
// disk and the pipeline that reads it, a small model with every kind of variable (weights,
// biases, batch-norm running statistics, moments), and a callback that stops training as a killed
// job would stop.

#include <cstdint>
#include <map>
#include <string>

#include "dataset/dataset.h"
#include "tests/testing/temp_dir.h"
#include "train/callbacks.h"
#include "train/model.h"

namespace lockstep::train::testing {

inline constexpr int64_t kSampleClasses = 10;
inline constexpr int64_t kSampleImageSize = 16;  // the network input

// DIR/train (4 images per class) and DIR/val (2 per class) of 20x20 JPEGs, removed at the end.
class SampleFolder {
 public:
  SampleFolder();
  std::string train() const { return dir_.Join("train"); }
  std::string val() const { return dir_.Join("val"); }

 private:
  lockstep::testing::TempDir dir_;
};

// `root` read in shards with random crops and flips (or, without `augment`, centre crops and no
// padding of the shards) to (N, 3, 16, 16) batches; without `normalized`, to uint8
// (N, 16, 16, 3) batches for ModelOptions::normalize_images with kSampleNormalization.
dataset::Dataset SamplePipeline(const std::string& root, int64_t batch, bool augment,
                                int num_shards = 1, int shard_id = 0, bool normalized = true);
inline const ImageNormalization kSampleNormalization = {.mean = {127.5f, 127.5f, 127.5f},
                                                        .std = {127.5f, 127.5f, 127.5f}};

// conv 3x3 (8) -> batch norm (unless left out) -> ReLU -> 2x2 max pool -> dense.
LayerPtr TinyNet(int64_t classes, bool batch_norm = true);

// TinyNet(kSampleClasses) with Momentum (warm-up, then cosine decay over 20 steps; weight
// decay) for batches of 4 (3, 16, 16) images; `options` sets the rest (seed, accumulation, data
// parallel).
Model TinyModel(ModelOptions options);

// Every parameter, moment and state of the model, by name, as bytes.
std::map<std::string, std::string> VariableBytes(const Model& model);

// Fails training with Cancelled after global step `stop`, as a killed job would stop.
class StopAfter : public Callback {
 public:
  explicit StopAfter(int64_t stop) : stop_(stop) {}
  absl::Status OnStepEnd(Model&, const StepInfo& step) override {
    return step.global_step == stop_ ? absl::CancelledError("stopped") : absl::OkStatus();
  }

 private:
  int64_t stop_;
};

}  // namespace lockstep::train::testing
