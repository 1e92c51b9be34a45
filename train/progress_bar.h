#pragma once

// A progress bar per epoch for a person at a terminal, redrawn in place:
//   epoch 2/6 [===========>            ] 45/112 loss 1.2345, 812.3 images/s, ETA 0:08
// lockstep-train shows it on rank 0 when the user's terminal receives its output, and prints
// LossMonitor's plain lines otherwise (logs, pipes, CI).

#include <chrono>
#include <cstdint>
#include <iostream>
#include <string>

#include "core/logging.h"
#include "train/callbacks.h"

namespace lockstep::train {

class ProgressBar : public Callback {
 public:
  // `ranks` scales rank 0's images/s to the job's.
  ProgressBar(int64_t epochs, int64_t steps_per_epoch, int ranks, std::ostream* out = &std::cout)
      : epochs_(epochs), steps_per_epoch_(steps_per_epoch), ranks_(ranks), out_(out) {}
  ~ProgressBar() override { ForgetOpenLine(out_); }
  absl::Status OnEpochBegin(Model& model, int64_t epoch) override;
  absl::Status OnStepEnd(Model& model, const StepInfo& step) override;
  absl::Status OnEpochEnd(Model& model, const EpochInfo& epoch) override;

 private:
  std::string Line(const StepInfo& step) const;
  using Clock = std::chrono::steady_clock;
  int64_t epochs_;
  int64_t steps_per_epoch_;
  int ranks_;
  std::ostream* out_;
  int64_t steps_run_ = 0;  // this epoch, since the start or a resume
  int64_t images_ = 0;
  double seconds_ = 0.0;
  Clock::time_point last_draw_;
  bool drawn_ = false;  // a line is open on the terminal
};

// Whether the person who started the job sees its standard output on a terminal. Under mpirun a
// rank's stdout is a pseudo-terminal of the launcher's even when the launcher writes to a file,
// so the question goes to the launcher: the rank's parent process (mpirun, or orted on another
// host), whose own stdout is checked through /proc.
bool OutputReachesTerminal(bool launched_by_mpi);

}  // namespace lockstep::train
