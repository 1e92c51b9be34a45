#include "train/callbacks.h"

#include <cmath>

#include "absl/strings/str_format.h"

namespace lockstep::train {

absl::Status CheckLossIsFinite(const StepInfo& step) {
  if (std::isfinite(step.loss)) return absl::OkStatus();
  return absl::InternalError(
      absl::StrFormat("epoch: %d step: %d, loss is %f: invalid loss, training stopped", step.epoch,
                      step.step, step.loss));
}

absl::Status LossMonitor::OnStepEnd(Model&, const StepInfo& step) {
  LS_RETURN_IF_ERROR(CheckLossIsFinite(step));
  images_ += step.batch_size;
  seconds_ += step.seconds;
  if (per_print_steps_ > 0 && step.step % per_print_steps_ == 0) {
    *out_ << absl::StrFormat("epoch: %d step: %d, loss is %.4f, %.1f images/s\n", step.epoch,
                             step.step, step.loss, seconds_ > 0.0 ? images_ / seconds_ : 0.0)
          << std::flush;
    images_ = 0;
    seconds_ = 0.0;
  }
  return absl::OkStatus();
}

absl::Status TimeMonitor::OnEpochEnd(Model&, const EpochInfo& epoch) {
  epochs_.push_back(epoch);
  const double ms = epoch.seconds * 1e3;
  *out_ << absl::StrFormat("epoch time: %.1f ms, per step time: %.1f ms, %.1f images/s\n", ms,
                           epoch.steps > 0 ? ms / epoch.steps : 0.0,
                           epoch.seconds > 0.0 ? epoch.images / epoch.seconds : 0.0)
        << std::flush;
  return absl::OkStatus();
}

}  // namespace lockstep::train
