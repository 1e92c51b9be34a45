#pragma once

// MNIST from its IDX files (train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-...), held in
// memory. Samples are (28, 28, 1) uint8 images with labels 0..9, sharded like ImageFolder.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "dataset/dataset.h"
#include "dataset/source.h"

namespace lockstep::dataset {

struct MnistOptions {
  std::string usage = "train";  // "train", "test" or "all" (train then test)
  bool shuffle = true;
  int num_shards = 1;
  int shard_id = 0;
  int64_t num_samples = 0;  // per shard and epoch; 0 reads them all
  bool drop_tail = false;
  bool uneven_tail = false;  // neither pad nor drop (ShardOptions)
  uint64_t seed = 0;
};

class MnistSource : public Source {
 public:
  static absl::StatusOr<std::shared_ptr<MnistSource>> Open(const std::string& dir,
                                                           const std::string& usage);

  int64_t size() const override { return static_cast<int64_t>(labels_.size()); }
  absl::StatusOr<Sample> Load(int64_t index) const override;
  std::string Describe(int64_t index) const override;
  std::vector<std::string> class_names() const override;

 private:
  MnistSource() = default;
  absl::Status Append(const std::string& images_path, const std::string& labels_path);

  int64_t rows_ = 0;
  int64_t cols_ = 0;
  std::vector<uint8_t> pixels_;                         // (N, rows, cols)
  std::vector<uint8_t> labels_;                         // (N)
  std::vector<std::pair<int64_t, std::string>> parts_;  // (first index, images file)
};

absl::StatusOr<Dataset> Mnist(const std::string& dir, const MnistOptions& options = {});

}  // namespace lockstep::dataset
