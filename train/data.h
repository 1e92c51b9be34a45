#pragma once

// What Model::Train and Model::Eval read: batches of images and labels, epoch after epoch.
// The ImageFolder pipeline (dataset/) plugs in behind the same interface.

#include <cstdint>
#include <memory>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace lockstep::train {

struct Batch {
  Tensor images;  // (N, C, H, W) f32
  Tensor labels;  // (N) i32
};

class DataSource {
 public:
  virtual ~DataSource() = default;
  // Starts epoch `epoch` (0-based); the sample order may depend on it.
  virtual absl::Status Reset(int64_t epoch) = 0;
  // Starts epoch `epoch` at batch `start_batch`, where a resumed run continues it: Next then
  // returns what it would after Reset(epoch) and `start_batch` calls. The default reads and drops
  // those batches; sources that can skip them cheaply override it.
  virtual absl::Status ResetAt(int64_t epoch, int64_t start_batch);
  // The next batch of the epoch, or false at its end. The batch stays valid until the next
  // call; the model copies it into its graph's input buffer once.
  virtual absl::StatusOr<bool> Next(Batch* batch) = 0;
};

struct InMemoryOptions {
  int64_t batch_size = 32;
  bool shuffle = false;         // a new permutation every epoch, drawn from (seed, epoch)
  bool drop_remainder = false;  // training needs full batches
  uint64_t seed = 0;
};

// Samples held in memory (tests, small generated tasks).
class InMemoryDataSource : public DataSource {
 public:
  // images (M, C, H, W) f32, labels (M) i32.
  static absl::StatusOr<std::unique_ptr<InMemoryDataSource>> Create(Tensor images, Tensor labels,
                                                                    InMemoryOptions options);

  absl::Status Reset(int64_t epoch) override;
  absl::Status ResetAt(int64_t epoch, int64_t start_batch) override;
  absl::StatusOr<bool> Next(Batch* batch) override;
  int64_t size() const { return images_.dim(0); }
  int64_t batches_per_epoch() const;

 private:
  InMemoryDataSource(Tensor images, Tensor labels, InMemoryOptions options);

  Tensor images_, labels_;
  InMemoryOptions options_;
  std::vector<int64_t> order_;  // this epoch's sample order
  int64_t position_ = 0;
  Batch buffer_;  // batch_size samples, reused
};

}  // namespace lockstep::train
