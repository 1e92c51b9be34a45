#pragma once

// SummaryCallback writes the training metrics through a SummaryWriter (summary_writer.h); give
// it to one rank only (lockstep-train: rank 0). Tags and when they are written:
//   train/loss (the mean over the steps since the last record), train/lr, train/images_per_sec
//     (every rank's images over the step time) and, under dynamic loss scaling,
//     train/loss_scale: every `every_steps` steps of an epoch;
//   val/accuracy, val/loss: AddEval, by whoever evaluates after an epoch (lockstep-train's
//     EpochReport), so that the model is not evaluated twice;
//   DIR/curves.png at the end of training (curves_plot.h); without gnuplot, one warning instead.
// The step of every record is the global step (optimizer updates since the start).

#include <cstdint>
#include <memory>
#include <string>

#include "train/callbacks.h"
#include "train/model.h"
#include "train/summary/summary_writer.h"

namespace lockstep::train {

struct SummaryOptions {
  std::string directory;
  int64_t every_steps = 20;
  int64_t world_size = 1;  // ranks training together, each with a batch like this rank's
};

class SummaryCallback : public Callback {
 public:
  // Opens the directory's files; an error names the path that could not be made or written.
  static absl::StatusOr<std::shared_ptr<SummaryCallback>> Create(SummaryOptions options);

  absl::Status OnStepEnd(Model& model, const StepInfo& step) override;
  absl::Status OnTrainEnd(Model& model) override;
  // The validation result of epoch `epoch`, which ended at global step `step`.
  absl::Status AddEval(int64_t epoch, int64_t step, const EvalResult& eval);

  const summary::SummaryWriter& writer() const { return *writer_; }

 private:
  SummaryCallback(SummaryOptions options, std::unique_ptr<summary::SummaryWriter> writer)
      : options_(std::move(options)), writer_(std::move(writer)) {}

  SummaryOptions options_;
  std::unique_ptr<summary::SummaryWriter> writer_;
  // Since the last record:
  int64_t steps_ = 0;
  double loss_sum_ = 0.0;
  int64_t images_ = 0;
  double seconds_ = 0.0;
  bool warned_no_gnuplot_ = false;
};

}  // namespace lockstep::train
