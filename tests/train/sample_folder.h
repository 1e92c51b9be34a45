#pragma once

// Helpers of the pipeline and checkpoint tests: a tiny copy of the built-in sample dataset on
// disk, the pipeline that reads it, and a small net with every kind of variable (weights, biases,
// batch-norm running statistics).

#include <cstdint>
#include <string>

#include "dataset/dataset.h"
#include "tests/testing/temp_dir.h"
#include "train/layers.h"

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

// `root` read in shards with random crops and flips (or, without `augment`, centre crops) to
// (N, 3, 16, 16) batches.
dataset::Dataset SamplePipeline(const std::string& root, int64_t batch, bool augment,
                                int num_shards = 1, int shard_id = 0);

// conv 3x3 (8) -> batch norm -> ReLU -> 2x2 max pool -> dense.
LayerPtr TinyNet(int64_t classes);

}  // namespace lockstep::train::testing
