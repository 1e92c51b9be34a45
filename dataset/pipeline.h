#pragma once

// The running pipeline: worker threads load and transform samples in parallel, the caller's
// Next() stacks them, in order, into batches. A bounded window (the prefetch queue) keeps the
// workers at most `prefetch_batches` batches ahead of the caller.
//
// Order and content do not depend on the number of workers: each epoch's sample order is fixed
// by (seed, epoch) and every random transform draws from (seed, epoch, sample position).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "dataset/sharding.h"
#include "dataset/source.h"
#include "dataset/transform.h"

namespace lockstep::dataset {

// What happens to a file that is not a valid image (corrupt, truncated, empty, another format).
enum class BadFilePolicy {
  kSkip,   // log a warning with its path, count it, go on
  kError,  // stop with an error naming the path
};

// Allocates a batch's tensors; lets a CUDA trainer hand out pinned host memory.
using BatchAllocator = std::function<Tensor(const Shape& shape, DType dtype)>;

// Everything an iterator needs; Dataset's builder methods fill it in.
struct PipelinePlan {
  std::shared_ptr<const Source> source;
  ShardOptions shard;
  BadFilePolicy on_bad_file = BadFilePolicy::kSkip;
  std::vector<TransformPtr> transforms;
  int64_t shuffle_buffer = 0;  // 0 or 1: no buffer shuffle
  int64_t batch_size = 1;
  bool drop_remainder = false;
  int64_t repeat = 1;   // epochs; negative repeats forever
  int num_workers = 0;  // 0: one per core
  int prefetch_batches = 2;
  BatchAllocator allocator;  // null: Tensor::Empty
};

struct Minibatch {
  Tensor images;  // (N, ...) the stacked samples, e.g. (N, C, H, W) float32
  Tensor labels;  // (N) int32
  int64_t epoch = 0;
};

struct PipelineStats {
  int64_t images = 0;            // delivered in batches so far
  double images_per_second = 0;  // since the iterator started
  int64_t queue_depth = 0;       // samples finished and waiting for Next()
  int64_t skipped_files = 0;
};

class Iterator {
 public:
  // Starts the workers at `first_epoch` (a resumed run passes its epoch).
  static absl::StatusOr<std::unique_ptr<Iterator>> Start(PipelinePlan plan, int64_t first_epoch);
  ~Iterator();
  Iterator(const Iterator&) = delete;
  Iterator& operator=(const Iterator&) = delete;

  // Fills *batch and returns true, or returns false after the last epoch. Batches never span
  // epochs. An error (a bad file under BadFilePolicy::kError, an unreadable file, a transform
  // that fails) is returned here and again on every later call.
  absl::StatusOr<bool> Next(Minibatch* batch);

  PipelineStats Stats() const;

 private:
  struct Work {
    int64_t sequence = 0;
    int64_t epoch = 0;
    ShardSlot slot{};
  };
  struct Slot {
    enum class State { kPending, kReady, kSkipped, kFailed };
    State state = State::kPending;
    int64_t epoch = 0;
    Tensor data;
    int32_t label = 0;
    absl::Status status;
  };

  Iterator(PipelinePlan plan, int64_t first_epoch);
  void WorkerLoop();
  bool ClaimLocked(Work* work);
  Slot Process(const Work& work);
  Slot Failure(const Work& work, const absl::Status& status);
  absl::StatusOr<std::optional<Slot>> NextSample();
  absl::Status CountEpoch(int64_t epoch, bool good);
  absl::StatusOr<bool> Assemble(Minibatch* batch);
  absl::StatusOr<Minibatch> Stack(const std::vector<Slot>& samples) const;
  Tensor Allocate(const Shape& shape, DType dtype) const;

  const PipelinePlan plan_;
  const int64_t end_epoch_;  // one past the last epoch
  const int64_t window_;     // samples the workers may run ahead of Next()
  const std::chrono::steady_clock::time_point start_time_;

  mutable std::mutex mu_;
  std::condition_variable room_cv_;   // workers wait for room in the window
  std::condition_variable ready_cv_;  // Next() waits for the oldest sample
  // Handing out work (under mu_).
  int64_t claim_epoch_;
  std::vector<ShardSlot> epoch_slots_;
  size_t epoch_next_ = 0;
  int64_t next_sequence_ = 0;
  bool exhausted_ = false;
  bool stop_ = false;
  // Results in sequence order (under mu_): slots_[i] is sequence slots_begin_ + i.
  std::deque<Slot> slots_;
  int64_t slots_begin_ = 0;
  int64_t ready_count_ = 0;

  // The caller's side, touched only by Next().
  std::optional<Slot> carry_;  // first sample of the next epoch's batch
  absl::Status failed_;
  int64_t counted_epoch_ = -1;
  int64_t good_in_epoch_ = 0;

  std::atomic<int64_t> delivered_{0};
  std::atomic<int64_t> skipped_{0};
  std::vector<std::thread> workers_;
};

}  // namespace lockstep::dataset
