#pragma once

// A dataset is a source plus the steps applied to it, built MindSpore-style:
//
//   LS_ASSIGN_OR_RETURN(Dataset train, ImageFolder(dir, {.num_shards = size, .shard_id = rank}));
//   train = train.Map({Decode(), RandomResizedCrop(224), RandomHorizontalFlip(),
//                      Normalize({123.7, 116.3, 103.5}, {58.4, 57.1, 57.4}), HWC2CHW()})
//               .Batch(32, /*drop_remainder=*/true);
//   LS_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> it, train.MakeIterator(epoch));
//
// The steps always run in one order per epoch: shard, shuffle buffer, map, batch; Repeat runs
// the epochs. Batches never span two epochs. Builder misuse (Map after Batch, ...) is reported by
// MakeIterator.

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/status.h"
#include "dataset/pipeline.h"
#include "dataset/sharding.h"
#include "dataset/source.h"
#include "dataset/transform.h"

namespace lockstep::dataset {

class Dataset {
 public:
  Dataset(std::shared_ptr<const Source> source, ShardOptions shard,
          BadFilePolicy on_bad_file = BadFilePolicy::kSkip);

  // Appends per-sample transforms, run by the worker pool.
  Dataset Map(std::vector<TransformPtr> transforms) const;
  // Reorders each epoch's samples through a buffer of `buffer_size` (for in-memory sources and
  // sources read without a global shuffle).
  Dataset Shuffle(int64_t buffer_size) const;
  Dataset Batch(int64_t batch_size, bool drop_remainder = false) const;
  // Runs `count` epochs (multiplies an earlier Repeat); a negative count repeats forever.
  Dataset Repeat(int64_t count = -1) const;
  // Worker threads of the map (0: one per core).
  Dataset Workers(int num_workers) const;
  // Batches the workers may finish ahead of the consumer.
  Dataset Prefetch(int batches) const;
  // Where batches are allocated (pinned host memory when training on CUDA).
  Dataset AllocateWith(BatchAllocator allocator) const;

  absl::StatusOr<std::unique_ptr<Iterator>> MakeIterator(int64_t first_epoch = 0) const;

  // This shard's samples and batches per epoch when no file is bad.
  int64_t SamplesPerEpoch() const;
  int64_t BatchesPerEpoch() const;
  std::vector<std::string> class_names() const { return plan_.source->class_names(); }
  const PipelinePlan& plan() const { return plan_; }

 private:
  Dataset WithMisuse(absl::string_view message) const;

  PipelinePlan plan_;
  bool batched_ = false;
  absl::Status misuse_;
};

}  // namespace lockstep::dataset
