#include "dataset/dataset.h"

#include <algorithm>
#include <utility>

namespace lockstep::dataset {

Dataset::Dataset(std::shared_ptr<const Source> source, ShardOptions shard,
                 BadFilePolicy on_bad_file) {
  plan_.source = std::move(source);
  plan_.shard = shard;
  plan_.on_bad_file = on_bad_file;
}

Dataset Dataset::WithMisuse(absl::string_view message) const {
  Dataset out = *this;
  if (out.misuse_.ok()) out.misuse_ = absl::FailedPreconditionError(message);
  return out;
}

Dataset Dataset::Map(std::vector<TransformPtr> transforms) const {
  if (batched_) return WithMisuse("Map after Batch: per-batch transforms are not supported");
  Dataset out = *this;
  out.plan_.transforms.insert(out.plan_.transforms.end(), transforms.begin(), transforms.end());
  return out;
}

Dataset Dataset::Shuffle(int64_t buffer_size) const {
  if (batched_) return WithMisuse("Shuffle after Batch is not supported");
  Dataset out = *this;
  out.plan_.shuffle_buffer = buffer_size;
  return out;
}

Dataset Dataset::Batch(int64_t batch_size, bool drop_remainder) const {
  if (batched_) return WithMisuse("Batch called twice");
  Dataset out = *this;
  out.plan_.batch_size = batch_size;
  out.plan_.drop_remainder = drop_remainder;
  out.batched_ = true;
  return out;
}

Dataset Dataset::Repeat(int64_t count) const {
  Dataset out = *this;
  out.plan_.repeat = (count < 0 || plan_.repeat < 0) ? -1 : plan_.repeat * count;
  return out;
}

Dataset Dataset::Workers(int num_workers) const {
  Dataset out = *this;
  out.plan_.num_workers = num_workers;
  return out;
}

Dataset Dataset::Prefetch(int batches) const {
  Dataset out = *this;
  out.plan_.prefetch_batches = batches;
  return out;
}

Dataset Dataset::AllocateWith(BatchAllocator allocator) const {
  Dataset out = *this;
  out.plan_.allocator = std::move(allocator);
  return out;
}

absl::StatusOr<std::unique_ptr<Iterator>> Dataset::MakeIterator(int64_t first_epoch) const {
  LS_RETURN_IF_ERROR(misuse_);
  return Iterator::Start(plan_, first_epoch);
}

int64_t Dataset::SamplesPerEpoch() const { return ShardSize(plan_.source->size(), plan_.shard); }

int64_t Dataset::BatchesPerEpoch() const {
  int64_t samples = SamplesPerEpoch();
  int64_t batch = std::max<int64_t>(1, plan_.batch_size);
  return plan_.drop_remainder ? samples / batch : (samples + batch - 1) / batch;
}

}  // namespace lockstep::dataset
