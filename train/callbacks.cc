#include "train/callbacks.h"

#include <cmath>

#include "absl/strings/str_format.h"
#include "parallel/agree.h"

namespace lockstep::train {

absl::Status CheckLossIsFinite(const StepInfo& step) {
  if (std::isfinite(step.loss) || step.update_skipped) return absl::OkStatus();
  return absl::InternalError(
      absl::StrFormat("epoch: %d step: %d, loss is %f: invalid loss, training stopped", step.epoch,
                      step.step, step.loss));
}

absl::Status TerminateOnNaN::OnStepEnd(Model&, const StepInfo& step) {
  const absl::Status local = CheckLossIsFinite(step);
  if (world_ == nullptr || world_->size() == 1) return local;
  return parallel::AgreeAcrossRanks(local, *world_);
}

std::string SkippedUpdateNotice(const StepInfo& step) {
  if (!step.update_skipped) return "";
  return absl::StrFormat(
      "epoch: %d step: %d, gradients overflowed: update skipped, loss scale now %g", step.epoch,
      step.step, step.loss_scale);
}

absl::Status LossMonitor::OnStepEnd(Model&, const StepInfo& step) {
  LS_RETURN_IF_ERROR(CheckLossIsFinite(step));
  images_ += step.batch_size;
  seconds_ += step.seconds;
  if (step.update_skipped) *out_ << SkippedUpdateNotice(step) << '\n' << std::flush;
  if (per_print_steps_ > 0 && step.step % per_print_steps_ == 0) {
    const std::string scale =
        step.loss_scale > 0.0 ? absl::StrFormat(", loss scale %g", step.loss_scale) : "";
    *out_ << absl::StrFormat("epoch: %d step: %d, loss is %.4f, %.1f images/s%s\n", step.epoch,
                             step.step, step.loss, seconds_ > 0.0 ? images_ / seconds_ : 0.0,
                             scale)
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
