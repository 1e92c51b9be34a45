#include "train/progress_bar.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace lockstep::train {
namespace {

constexpr int kBarWidth = 24;
// Terminals need no more than this, and a fast step would otherwise cost a write each.
constexpr auto kRedrawEvery = std::chrono::milliseconds(100);

std::string Duration(double seconds) {
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  return s >= 3600 ? absl::StrFormat("%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60)
                   : absl::StrFormat("%d:%02d", s / 60, s % 60);
}

}  // namespace

std::string ProgressBar::Line(const StepInfo& step) const {
  const int64_t total = std::max<int64_t>(steps_per_epoch_, step.step);
  const int filled = static_cast<int>(kBarWidth * step.step / total);
  std::string bar(filled, '=');
  if (filled < kBarWidth) bar += '>' + std::string(kBarWidth - filled - 1, ' ');
  const double per_step = steps_run_ > 0 ? seconds_ / steps_run_ : 0.0;
  const double rate = seconds_ > 0.0 ? static_cast<double>(images_ * ranks_) / seconds_ : 0.0;
  return absl::StrFormat("epoch %d/%d [%s] %d/%d loss %.4f, %.1f images/s, ETA %s", step.epoch,
                         epochs_, bar, step.step, total, step.loss, rate,
                         Duration(per_step * static_cast<double>(total - step.step)));
}

absl::Status ProgressBar::OnEpochBegin(Model&, int64_t) {
  steps_run_ = 0;
  images_ = 0;
  seconds_ = 0.0;
  return absl::OkStatus();
}

absl::Status ProgressBar::OnStepEnd(Model&, const StepInfo& step) {
  LS_RETURN_IF_ERROR(CheckLossIsFinite(step));
  ++steps_run_;
  images_ += step.batch_size;
  seconds_ += step.seconds;
  if (step.update_skipped) {
    *out_ << '\r' << SkippedUpdateNotice(step) << "\x1b[K\n" << std::flush;
    drawn_ = false;
    SetOpenLine(nullptr);
  }
  const Clock::time_point now = Clock::now();
  if (drawn_ && now - last_draw_ < kRedrawEvery && step.step < steps_per_epoch_) {
    return absl::OkStatus();
  }
  // Back to the line's start and clear to its end: the new line may be shorter.
  *out_ << '\r' << Line(step) << "\x1b[K" << std::flush;
  SetOpenLine(out_);  // a warning meanwhile starts on a line of its own
  last_draw_ = now;
  drawn_ = true;
  return absl::OkStatus();
}

absl::Status ProgressBar::OnEpochEnd(Model&, const EpochInfo&) {
  if (drawn_) *out_ << '\n' << std::flush;
  drawn_ = false;
  SetOpenLine(nullptr);
  return absl::OkStatus();
}

bool OutputReachesTerminal(bool launched_by_mpi) {
  if (!launched_by_mpi) return isatty(STDOUT_FILENO) == 1;
  const int launcher_stdout =
      open(absl::StrCat("/proc/", getppid(), "/fd/1").c_str(), O_WRONLY | O_NOCTTY);
  if (launcher_stdout < 0) return false;  // another user's process or no /proc: stay plain
  const bool terminal = isatty(launcher_stdout) == 1;
  close(launcher_stdout);
  return terminal;
}

}  // namespace lockstep::train
