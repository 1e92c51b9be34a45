#pragma once

// The built-in sample data set: an ImageFolder of JPEGs (train/ and val/, ten classes) drawn
// procedurally, so the project needs no download. Each class is a texture that fills the whole
// image (stripes, checkerboard, dots, rings, ...) with random scale, orientation and lighting,
// colours around a class hue (as Fruit-360's fruits have theirs) and pixel noise: a small ResNet
// learns it from random 32x32 crops as well as from whole images. Everything is a pure function
// of the seed.

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace lockstep::dataset {

struct SampleDatasetOptions {
  uint64_t seed = 0;
  int train_per_class = 300;
  int val_per_class = 60;
  int height = 100;
  int width = 100;
  int quality = 90;
};

// The class folder names, by label.
const std::vector<std::string>& SampleClassNames();

// One (height, width, 3) uint8 image of class `label`.
Tensor RenderSampleImage(int label, uint64_t seed, int64_t index, int64_t height, int64_t width);

// Writes dir/train/<class>/<class>_NNNNN.jpg and dir/val/<class>/<class>_NNNNN.jpg
// (sample_writer.cc). `dir` may exist, but not its train/ or val/. Sizes whose images could not
// be drawn in memory, or whose data set would not fit on the disk, are refused before anything
// is created; the data set is written beside `dir` and moved there once complete, and a failure
// leaves no folder behind. Messages name the options as lockstep-make-sample's flags.
absl::Status WriteSampleDataset(const std::string& dir, const SampleDatasetOptions& options);

}  // namespace lockstep::dataset
