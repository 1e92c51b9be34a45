#pragma once

// What a data-parallel training job does around Model::Train, shared by its front ends
// (lockstep-train, the Python module): resume with the ranks agreed, report each epoch, and
// refuse a run that applied no optimizer update.
//
//   LS_RETURN_IF_ERROR(ResumeOrStartFresh(model, dir, "resnet8", world, recipe));
//   auto updates = std::make_shared<UpdateCounter>();
//   callbacks.push_back(std::make_shared<EpochReport>(val, epochs, world, summary));
//   callbacks.push_back(updates);
//   LS_RETURN_IF_ERROR(model.Train(epochs, train, callbacks));
//   LS_ASSIGN_OR_RETURN(const double loss_scale, model.LossScale());
//   return parallel::AgreeAcrossRanks(updates->Outcome(epochs, loss_scale), *world);

#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <string>

#include "core/status.h"
#include "parallel/communicator.h"
#include "train/callbacks.h"
#include "train/data.h"
#include "train/model.h"
#include "train/summary/summary_callback.h"

namespace lockstep::train {

// Resumes `model` from the newest complete step of `prefix` in `directory`
// (ResumeFromCheckpoint, with `recipe`), or leaves it fresh when there is none; a refusal is
// agreed across `world`, so that it prints once. Rank 0 writes to `out` where training goes on
// ("resumed at step 10, 2 epoch(s) done") or that `directory` held nothing to resume.
absl::Status ResumeOrStartFresh(Model& model, const std::string& directory,
                                const std::string& prefix,
                                std::shared_ptr<parallel::Communicator> world,
                                const std::map<std::string, std::string>& recipe,
                                std::ostream* out = &std::cout);

// After every epoch: evaluates on `val` on all ranks (each its shard, Model::Eval sums the
// counts); rank 0 writes the epoch's line to `out` and hands the result to `summary`.
class EpochReport : public Callback {
 public:
  // `val` null: no evaluation; `summary` null: no summary (ranks other than 0 pass none).
  EpochReport(DataSource* val, int64_t epochs, std::shared_ptr<parallel::Communicator> world,
              std::shared_ptr<SummaryCallback> summary, std::ostream* out = &std::cout)
      : val_(val),
        epochs_(epochs),
        world_(std::move(world)),
        summary_(std::move(summary)),
        out_(out) {}

  absl::Status OnEpochEnd(Model& model, const EpochInfo& epoch) override;

 private:
  DataSource* val_;
  int64_t epochs_;
  std::shared_ptr<parallel::Communicator> world_;
  std::shared_ptr<SummaryCallback> summary_;
  std::ostream* out_;
};

// Counts the optimizer updates applied: steps that ended a gradient accumulation and were not
// skipped for non-finite gradients (dynamic loss scaling).
class UpdateCounter : public Callback {
 public:
  absl::Status OnStepEnd(Model& model, const StepInfo& step) override;
  // Why a run of `epochs` applied no update; OK when it applied one. Every rank counts the same
  // updates (they skip alike and end alike), so the outcome agrees across them.
  absl::Status Outcome(int64_t epochs, double loss_scale) const;

 private:
  int64_t steps_ = 0;
  int64_t updates_ = 0;
};

}  // namespace lockstep::train
