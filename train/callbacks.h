#pragma once

// Callbacks Model::Train calls around epochs and steps, as MindSpore's: LossMonitor prints the
// loss, TimeMonitor the epoch times. A callback that returns an error stops training with it.

#include <cstdint>
#include <iostream>
#include <memory>
#include <vector>

#include "core/status.h"
#include "parallel/communicator.h"

namespace lockstep::train {

class Model;

struct StepInfo {
  int64_t epoch = 0;        // 1-based
  int64_t step = 0;         // 1-based within the epoch
  int64_t global_step = 0;  // 1-based over the model's life
  bool last_in_epoch = false;  // no batch follows in this epoch
  int64_t batch_size = 0;
  double loss = 0.0;
  double lr = 0.0;
  double seconds = 0.0;  // wall time of the step, copying the batch in included
  // Dynamic loss scaling: whether the gradients overflowed and the update was skipped, and the
  // scale after the step (0 with a fixed scale).
  bool update_skipped = false;
  double loss_scale = 0.0;
};

struct EpochInfo {
  int64_t epoch = 0;  // 1-based
  int64_t steps = 0;
  int64_t first_step = 0;  // steps of the epoch trained before a resume, not counted in `steps`
  int64_t images = 0;
  double seconds = 0.0;  // wall time of the epoch, reading the data included
  double mean_loss = 0.0;
};

class Callback {
 public:
  virtual ~Callback() = default;
  virtual absl::Status OnTrainBegin(Model&) { return absl::OkStatus(); }
  virtual absl::Status OnEpochBegin(Model&, int64_t /*epoch*/) { return absl::OkStatus(); }
  virtual absl::Status OnStepEnd(Model&, const StepInfo&) { return absl::OkStatus(); }
  virtual absl::Status OnEpochEnd(Model&, const EpochInfo&) { return absl::OkStatus(); }
  virtual absl::Status OnTrainEnd(Model&) { return absl::OkStatus(); }
};
using Callbacks = std::vector<std::shared_ptr<Callback>>;

// A NaN or infinite loss: an error naming the epoch and step, which stops training. Not where
// dynamic loss scaling skipped the step's update: the overflow was handled.
absl::Status CheckLossIsFinite(const StepInfo& step);

// CheckLossIsFinite after every step, as Keras's TerminateOnNaN. With a world of several ranks
// every rank checks its own loss and the outcome is agreed (a small collective per step), so
// that all stop at the same step with one error naming the ranks whose loss went wrong.
class TerminateOnNaN : public Callback {
 public:
  explicit TerminateOnNaN(std::shared_ptr<parallel::Communicator> world = nullptr)
      : world_(std::move(world)) {}
  absl::Status OnStepEnd(Model&, const StepInfo& step) override;

 private:
  std::shared_ptr<parallel::Communicator> world_;
};

// For a step whose update dynamic loss scaling skipped: "epoch: 1 step: 7, gradients overflowed:
// update skipped, loss scale now 8388608". Empty for any other step.
std::string SkippedUpdateNotice(const StepInfo& step);

// Every `per_print_steps` steps: "epoch: 1 step: 20, loss is 2.3102, 412.5 images/s", the rate
// over the steps since the last line (and ", loss scale 65536" under dynamic loss scaling), and
// every SkippedUpdateNotice. A NaN or infinite loss stops training with an error.
class LossMonitor : public Callback {
 public:
  explicit LossMonitor(int64_t per_print_steps = 1, std::ostream* out = &std::cout)
      : per_print_steps_(per_print_steps), out_(out) {}
  absl::Status OnStepEnd(Model& model, const StepInfo& step) override;

 private:
  int64_t per_print_steps_;
  std::ostream* out_;
  int64_t images_ = 0;  // since the last line
  double seconds_ = 0.0;
};

// After every epoch: "epoch time: 1234.5 ms, per step time: 61.7 ms, 518.6 images/s", and the
// timings kept for the caller.
class TimeMonitor : public Callback {
 public:
  explicit TimeMonitor(std::ostream* out = &std::cout) : out_(out) {}
  absl::Status OnEpochEnd(Model& model, const EpochInfo& epoch) override;
  const std::vector<EpochInfo>& epochs() const { return epochs_; }

 private:
  std::ostream* out_;
  std::vector<EpochInfo> epochs_;
};

}  // namespace lockstep::train
