#pragma once

// Moves training batches onto the graphs' device ahead of the steps that take them: the copy of
// batch N+1 runs on the device's copy stream while step N computes, through two device slots
// used in turn (double buffering). For batch k in slot k % 2:
//
//   Stage   host:           wait for "batch k-2 copied" (the slot's host memory is free again)
//           copy stream:    wait for "batch k-2 fed" (the slot's device memory is free again);
//                           copy images, labels and the step's control scalar; record
//                           "batch k copied"
//   Feed    compute stream: wait for "batch k copied"; normalize the images (or copy them),
//                           copy labels and control into the graph's inputs; record
//                           "batch k fed"
//
// So the copy of N+1 waits only for the feed of N-1, never for step N's compute, and the host
// waits inside a step for nothing. Before a data source reuses a batch's host memory, the host
// waits for its copy (AwaitCopies), done by then in all but name. Batches come in host memory from
// HostBatchAllocator (page-locked on CUDA, where a copy from pageable memory would make the host
// wait). On the CPU a slot is the host batch itself and nothing is copied. Its calls may come
// from any thread: each makes the device current on the calling thread first.

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/host_buffer_pool.h"
#include "core/tensor.h"
#include "dataset/pipeline.h"

namespace lockstep::train {

// Per-channel mean and std of Backend::NormalizeImages, on 0..255 pixel values.
struct ImageNormalization {
  std::vector<float> mean;
  std::vector<float> std;
};

// Host memory for the batches of a model on `device` that its copies read without the host
// waiting (page-locked on CUDA), recycled; null on the CPU, where the pipeline's own memory is
// as good. Where such memory cannot be had, plain host memory, with one warning.
dataset::BatchAllocator HostBatchAllocator(Device device);

class InputFeed {
 public:
  // One operation, in the order issued (plan()).
  struct Op {
    enum class On { kHost, kCopyStream, kComputeStream };
    enum class Kind { kCopy, kFeed, kRun, kRecord, kWait };
    On on;
    Kind kind;
    std::string what;  // an event's label for kRecord and kWait; "batch k" otherwise
    // "copy stream: wait for batch 1 fed"
    std::string ToString() const;
  };

  // Batches for graphs on `device`; with `normalize`, images come as uint8 (N, H, W, C) and go
  // into the graphs' float32 (N, C, H, W) through Backend::NormalizeImages.
  InputFeed(Device device, std::optional<ImageNormalization> normalize);
  ~InputFeed();
  InputFeed(const InputFeed&) = delete;
  InputFeed& operator=(const InputFeed&) = delete;

  // Queues the copy of the next batch: host images as the graphs take them (or uint8 under
  // normalize), labels i32 (N), and a scalar the step reads (its learning rate). At most two
  // batches wait staged and not fed.
  absl::Status Stage(const Tensor& images, const Tensor& labels, float control);
  // Queues on the compute stream the writing of the oldest staged batch into a graph's inputs
  // (`control` undefined for graphs without one); returns the batch's number, from 0.
  absl::StatusOr<int64_t> Feed(const Tensor& images, const Tensor& labels, const Tensor& control);
  // The host waits until every staged batch has been copied, after which the memory the caller
  // staged them from may change.
  absl::Status AwaitCopies();

  // Adds what the caller did with fed batch `k` (kRun on the compute stream, the host's kWait
  // for its results) to the plan.
  void Note(Op::On on, Op::Kind kind, std::string what);
  // Off by default: while on, every operation is appended to plan().
  void RecordPlan(bool on) { recording_ = on; }
  const std::vector<Op>& plan() const { return plan_; }

 private:
  struct Slot;
  absl::Status PrepareSlot(Slot& slot, const Tensor& images, const Tensor& labels);
  absl::Status Wait(Op::On on, DeviceEvent& event, const std::string& label);
  // The host waits for the copy of the batch in `slot` unless it has already.
  absl::Status AwaitCopy(Slot& slot);
  absl::Status Record(Stream stream, DeviceEvent& event, std::string label);
  absl::Status Write(const Tensor& from, const Tensor& to);

  Device device_;
  Backend& backend_;
  std::optional<ImageNormalization> normalize_;
  std::shared_ptr<HostBufferPool> host_memory_;  // the control scalars'
  std::array<std::unique_ptr<Slot>, 2> slots_;
  int64_t staged_ = 0;  // batches staged so far; the next is batch staged_
  int64_t fed_ = 0;
  int64_t awaited_ = 0;  // batches whose copies the host has waited for
  bool recording_ = false;
  std::vector<Op> plan_;
};

}  // namespace lockstep::train
