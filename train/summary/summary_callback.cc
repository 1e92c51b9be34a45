#include "train/summary/summary_callback.h"

#include "core/logging.h"
#include "train/summary/curves_plot.h"

namespace lockstep::train {

absl::StatusOr<std::shared_ptr<SummaryCallback>> SummaryCallback::Create(SummaryOptions options) {
  if (options.every_steps < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("summary every ", options.every_steps, " steps: must be at least 1"));
  }
  LS_ASSIGN_OR_RETURN(std::unique_ptr<summary::SummaryWriter> writer,
                      summary::SummaryWriter::Open(options.directory));
  return std::shared_ptr<SummaryCallback>(
      new SummaryCallback(std::move(options), std::move(writer)));
}

absl::Status SummaryCallback::OnStepEnd(Model&, const StepInfo& step) {
  ++steps_;
  loss_sum_ += step.loss;
  images_ += step.batch_size * options_.world_size;
  seconds_ += step.seconds;
  if (step.step % options_.every_steps != 0) return absl::OkStatus();
  const double loss = loss_sum_ / static_cast<double>(steps_);
  const double images_per_second = seconds_ > 0.0 ? static_cast<double>(images_) / seconds_ : 0.0;
  steps_ = 0;
  loss_sum_ = 0.0;
  images_ = 0;
  seconds_ = 0.0;
  LS_RETURN_IF_ERROR(writer_->AddScalar("train/loss", step.epoch, step.global_step, loss));
  LS_RETURN_IF_ERROR(writer_->AddScalar("train/lr", step.epoch, step.global_step, step.lr));
  if (step.loss_scale > 0.0) {  // dynamic loss scaling
    LS_RETURN_IF_ERROR(
        writer_->AddScalar("train/loss_scale", step.epoch, step.global_step, step.loss_scale));
  }
  return writer_->AddScalar("train/images_per_sec", step.epoch, step.global_step,
                            images_per_second);
}

absl::Status SummaryCallback::AddEval(int64_t epoch, int64_t step, const EvalResult& eval) {
  LS_RETURN_IF_ERROR(writer_->AddScalar("val/accuracy", epoch, step, eval.accuracy));
  return writer_->AddScalar("val/loss", epoch, step, eval.loss);
}

absl::Status SummaryCallback::OnTrainEnd(Model&) {
  LS_ASSIGN_OR_RETURN(summary::PlotOutcome outcome, summary::PlotCurves(writer_->directory()));
  if (outcome == summary::PlotOutcome::kNoGnuplot && !warned_no_gnuplot_) {
    warned_no_gnuplot_ = true;
    LS_LOG(Warning) << "gnuplot is not installed (Debian: gnuplot-nox); " << writer_->directory()
                    << "/" << summary::kCurvesFileName << " is not drawn";
  }
  return absl::OkStatus();
}

}  // namespace lockstep::train
