#include "dataset/pipeline.h"

#include <cstring>
#include <limits>
#include <mutex>
#include <set>
#include <string>

#include "core/logging.h"
#include "core/threads.h"
#include "dataset/decode.h"
#include "dataset/sample_random.h"

namespace lockstep::dataset {
namespace {

absl::Status ValidatePlan(const PipelinePlan& plan, int64_t first_epoch) {
  if (plan.source == nullptr) return absl::InvalidArgumentError("pipeline has no source");
  LS_RETURN_IF_ERROR(ValidateShardOptions(plan.shard));
  if (ShardSize(plan.source->size(), plan.shard) == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shard ", plan.shard.shard_id, " of ", plan.shard.num_shards, " gets no samples from ",
        plan.source->size(), plan.shard.drop_tail ? " with the tail dropped" : ""));
  }
  if (plan.batch_size < 1 || plan.prefetch_batches < 1 || plan.num_workers < 0 ||
      plan.shuffle_buffer < 0 || first_epoch < 0 || first_epoch >= kMaxEpochs) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pipeline needs batch_size >= 1, prefetch >= 1, workers >= 0, shuffle buffer >= 0 and "
        "first epoch in [0, 2^20); got ",
        plan.batch_size, ", ", plan.prefetch_batches, ", ", plan.num_workers, ", ",
        plan.shuffle_buffer, ", ", first_epoch));
  }
  for (const TransformPtr& transform : plan.transforms) {
    if (transform == nullptr) return absl::InvalidArgumentError("null transform in Map");
    LS_RETURN_IF_ERROR(transform->Validate());
  }
  return absl::OkStatus();
}

int WorkerCount(const PipelinePlan& plan) {
  return plan.num_workers > 0 ? plan.num_workers : DefaultThreads(1);
}

// Whether this process has not warned about `file` yet: a bad file is skipped every epoch, but
// said once a run.
bool FirstWarningAbout(const std::string& file) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mutex);
  return warned.insert(file).second;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Iterator>> Iterator::Start(PipelinePlan plan, int64_t first_epoch) {
  LS_RETURN_IF_ERROR(ValidatePlan(plan, first_epoch));
  std::unique_ptr<Iterator> iterator(new Iterator(std::move(plan), first_epoch));
  int workers = WorkerCount(iterator->plan_);
  for (int i = 0; i < workers; ++i) {
    iterator->workers_.emplace_back([it = iterator.get()] { it->WorkerLoop(); });
  }
  return iterator;
}

Iterator::Iterator(PipelinePlan plan, int64_t first_epoch)
    : plan_(std::move(plan)),
      end_epoch_(plan_.repeat < 0 ? std::numeric_limits<int64_t>::max()
                                  : first_epoch + plan_.repeat),
      window_(std::max<int64_t>(plan_.prefetch_batches * plan_.batch_size, 2 * WorkerCount(plan_))),
      start_time_(std::chrono::steady_clock::now()),
      claim_epoch_(first_epoch - 1) {}

Iterator::~Iterator() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  room_cv_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

bool Iterator::ClaimLocked(Work* work) {
  while (epoch_next_ == epoch_slots_.size()) {
    // An endless Repeat ends at the last epoch the RNG streams can key.
    if (claim_epoch_ + 1 >= std::min(end_epoch_, kMaxEpochs)) {
      exhausted_ = true;
      return false;
    }
    ++claim_epoch_;
    epoch_slots_ = ShuffleWithBuffer(ShardEpoch(plan_.source->size(), plan_.shard, claim_epoch_),
                                     plan_.shuffle_buffer, plan_.shard.seed, claim_epoch_);
    epoch_next_ = 0;
  }
  *work = {next_sequence_++, claim_epoch_, epoch_slots_[epoch_next_++]};
  slots_.emplace_back().epoch = work->epoch;
  return true;
}

void Iterator::WorkerLoop() {
  while (true) {
    Work work;
    {
      std::unique_lock<std::mutex> lock(mu_);
      room_cv_.wait(
          lock, [this] { return stop_ || exhausted_ || next_sequence_ < slots_begin_ + window_; });
      if (stop_) return;
      if (!ClaimLocked(&work)) {
        lock.unlock();
        // The end of the stream: wake Next() and the other workers, which exit too.
        ready_cv_.notify_all();
        room_cv_.notify_all();
        return;
      }
    }
    Slot result = Process(work);
    {
      std::lock_guard<std::mutex> lock(mu_);
      slots_[work.sequence - slots_begin_] = std::move(result);
      ++ready_count_;
    }
    ready_cv_.notify_all();
  }
}

Iterator::Slot Iterator::Process(const Work& work) {
  absl::StatusOr<Sample> sample = plan_.source->Load(work.slot.sample);
  if (!sample.ok()) return Failure(work, sample.status());
  Tensor data = std::move(sample->data);
  for (size_t step = 0; step < plan_.transforms.size(); ++step) {
    const Transform& transform = *plan_.transforms[step];
    const Transform* next =
        step + 1 < plan_.transforms.size() ? plan_.transforms[step + 1].get() : nullptr;
    TransformContext context(plan_.shard.seed, work.epoch, work.slot.position,
                             static_cast<int>(step), next);
    absl::StatusOr<Tensor> output = transform.Apply(data, context);
    if (!output.ok()) return Failure(work, Annotate(output.status(), transform.Name()));
    data = *std::move(output);
  }
  Slot slot;
  slot.state = Slot::State::kReady;
  slot.epoch = work.epoch;
  slot.data = std::move(data);
  slot.label = sample->label;
  return slot;
}

Iterator::Slot Iterator::Failure(const Work& work, const absl::Status& status) {
  std::string where = plan_.source->Describe(work.slot.sample);
  Slot slot;
  slot.epoch = work.epoch;
  if (IsBadImage(status) && plan_.on_bad_file == BadFilePolicy::kSkip) {
    if (FirstWarningAbout(where)) {
      LS_LOG(Warning) << "skipping bad image file " << where << ": " << status.message()
                      << " (said once; the file is skipped every epoch)";
    }
    skipped_.fetch_add(1);
    slot.state = Slot::State::kSkipped;
  } else {
    slot.state = Slot::State::kFailed;
    slot.status = Annotate(status, where);
  }
  return slot;
}

absl::StatusOr<std::optional<Iterator::Slot>> Iterator::NextSample() {
  if (carry_.has_value()) {
    std::optional<Slot> slot = std::move(carry_);
    carry_.reset();
    return slot;
  }
  while (true) {
    Slot slot;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ready_cv_.wait(lock, [this] {
        bool front_done = !slots_.empty() && slots_.front().state != Slot::State::kPending;
        return front_done || (exhausted_ && slots_.empty());
      });
      if (slots_.empty()) break;
      slot = std::move(slots_.front());
      slots_.pop_front();
      ++slots_begin_;
      --ready_count_;
    }
    room_cv_.notify_one();
    bool good = slot.state == Slot::State::kReady;
    LS_RETURN_IF_ERROR(CountEpoch(slot.epoch, good));
    if (slot.state == Slot::State::kFailed) return slot.status;
    if (good) return slot;
  }
  LS_RETURN_IF_ERROR(CountEpoch(-1, false));
  return std::nullopt;
}

// An epoch of nothing but bad files would let an endless Repeat spin forever: fail instead.
absl::Status Iterator::CountEpoch(int64_t epoch, bool good) {
  if (epoch != counted_epoch_) {
    if (counted_epoch_ >= 0 && good_in_epoch_ == 0) {
      return absl::DataLossError(absl::StrCat("every sample of epoch ", counted_epoch_,
                                              " was a bad image file (", skipped_.load(),
                                              " skipped so far)"));
    }
    counted_epoch_ = epoch;
    good_in_epoch_ = 0;
  }
  if (good) ++good_in_epoch_;
  return absl::OkStatus();
}

absl::StatusOr<bool> Iterator::Next(Minibatch* batch) {
  if (!failed_.ok()) return failed_;
  absl::StatusOr<bool> result = Assemble(batch);
  if (!result.ok()) failed_ = result.status();
  return result;
}

absl::StatusOr<bool> Iterator::Assemble(Minibatch* batch) {
  size_t batch_size = static_cast<size_t>(plan_.batch_size);
  while (true) {
    std::vector<Slot> samples;
    bool end = false;
    while (samples.size() < batch_size) {
      LS_ASSIGN_OR_RETURN(std::optional<Slot> slot, NextSample());
      if (!slot.has_value()) {
        end = true;
        break;
      }
      if (!samples.empty() && slot->epoch != samples.front().epoch) {
        carry_ = std::move(slot);
        break;
      }
      samples.push_back(*std::move(slot));
    }
    if (samples.empty()) return false;
    if (samples.size() == batch_size || !plan_.drop_remainder) {
      LS_ASSIGN_OR_RETURN(*batch, Stack(samples));
      delivered_.fetch_add(static_cast<int64_t>(samples.size()));
      return true;
    }
    if (end) return false;  // the dropped remainder was the last of the stream
  }
}

absl::StatusOr<Minibatch> Iterator::Stack(const std::vector<Slot>& samples) const {
  const Tensor& first = samples.front().data;
  int64_t count = static_cast<int64_t>(samples.size());
  Shape shape = first.shape();
  shape.insert(shape.begin(), count);
  Minibatch batch{Allocate(shape, first.dtype()), Allocate({count}, DType::kI32),
                  samples.front().epoch};
  if (batch.images.shape() != shape || batch.images.dtype() != first.dtype() ||
      batch.labels.numel() != count || batch.labels.dtype() != DType::kI32) {
    return absl::InternalError("the batch allocator returned tensors of the wrong shape or dtype");
  }
  char* images = static_cast<char*>(batch.images.raw_data());
  int32_t* labels = batch.labels.data<int32_t>();
  for (int64_t i = 0; i < count; ++i) {
    const Tensor& data = samples[i].data;
    if (data.shape() != first.shape() || data.dtype() != first.dtype()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot batch samples of different shapes: ", DTypeName(first.dtype()),
          ShapeToString(first.shape()), " and ", DTypeName(data.dtype()),
          ShapeToString(data.shape()), "; map a Resize or crop to one size before Batch"));
    }
    std::memcpy(images + i * first.nbytes(), data.raw_data(), first.nbytes());
    labels[i] = samples[i].label;
  }
  return batch;
}

Tensor Iterator::Allocate(const Shape& shape, DType dtype) const {
  return plan_.allocator ? plan_.allocator(shape, dtype) : Tensor::Empty(shape, dtype);
}

PipelineStats Iterator::Stats() const {
  PipelineStats stats;
  stats.images = delivered_.load();
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time_).count();
  stats.images_per_second = seconds > 0 ? stats.images / seconds : 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats.queue_depth = ready_count_;
  }
  stats.skipped_files = skipped_.load();
  return stats;
}

}  // namespace lockstep::dataset
