#pragma once

// A source is a random-access list of labelled samples: ImageFolder's files, MNIST's images, or a
// user's own. The pipeline shards it, orders it per epoch and maps transforms over it.

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace lockstep::dataset {

struct Sample {
  Tensor data;  // encoded file bytes (1-D uint8) or an image (H, W, C)
  int32_t label = 0;
};

class Source {
 public:
  virtual ~Source() = default;
  virtual int64_t size() const = 0;
  // Thread-safe. A failure here (an unreadable file) stops the pipeline.
  virtual absl::StatusOr<Sample> Load(int64_t index) const = 0;
  // Where sample `index` comes from ("/data/train/cat/001.jpg"), for messages.
  virtual std::string Describe(int64_t index) const = 0;
  // Class names by label, when the source has them.
  virtual std::vector<std::string> class_names() const { return {}; }
};

}  // namespace lockstep::dataset
