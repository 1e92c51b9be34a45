#include "train/job_run.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/logging.h"
#include "parallel/agree.h"
#include "train/checkpoint_callback.h"

namespace lockstep::train {

absl::Status ResumeOrStartFresh(Model& model, const std::string& directory,
                                const std::string& prefix,
                                std::shared_ptr<parallel::Communicator> world,
                                const std::map<std::string, std::string>& recipe,
                                std::ostream* out) {
  absl::StatusOr<bool> resumed = ResumeFromCheckpoint(model, directory, prefix, world, recipe);
  // Another model's checkpoints, or another image size's, every rank finds alike.
  LS_RETURN_IF_ERROR(parallel::AgreeAcrossRanks(resumed.status(), *world));
  if (world->rank() == 0) {
    *out << LogPrefix()
         << (*resumed ? absl::StrFormat("resumed at step %d, %d epoch(s) done", model.global_step(),
                                        model.epochs_done())
                      : absl::StrCat("nothing to resume in ", directory, "; starting fresh"))
         << std::endl;
  }
  return absl::OkStatus();
}

absl::Status EpochReport::OnEpochEnd(Model& model, const EpochInfo& epoch) {
  std::optional<EvalResult> eval;
  if (val_ != nullptr) {
    LS_ASSIGN_OR_RETURN(eval, model.Eval(*val_));
  }
  if (world_->rank() == 0) {
    const double images = static_cast<double>(epoch.images * world_->size());
    *out_ << absl::StrFormat("epoch %d/%d: train loss %.4f, ", epoch.epoch, epochs_,
                             epoch.mean_loss);
    if (eval.has_value()) {
      *out_ << absl::StrFormat("val accuracy %.4f (%d/%d), val loss %.4f, ", eval->accuracy,
                               eval->correct, eval->samples, eval->loss);
    }
    *out_ << absl::StrFormat("%.1f images/s, %.1f s\n",
                             epoch.seconds > 0 ? images / epoch.seconds : 0.0, epoch.seconds)
          << std::flush;
  }
  if (summary_ == nullptr || !eval.has_value()) return absl::OkStatus();
  return summary_->AddEval(epoch.epoch, model.global_step(), *eval);
}

absl::Status UpdateCounter::OnStepEnd(Model& model, const StepInfo& step) {
  ++steps_;
  if (model.global_step() == step.global_step && !step.update_skipped) ++updates_;
  return absl::OkStatus();
}

absl::Status UpdateCounter::Outcome(int64_t epochs, double loss_scale) const {
  if (updates_ > 0) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "trained ", epochs, " epoch(s) without applying one optimizer update: ",
      steps_ == 0 ? "no training step ran"
                  : absl::StrCat("every update of ", steps_,
                                 " step(s) was skipped for non-finite gradients (loss scale now ",
                                 loss_scale, ")")));
}

}  // namespace lockstep::train
