#include "train/job_checks.h"

#include <zlib.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/compile.h"
#include "parallel/agree.h"
#include "train/loss.h"
#include "train/model.h"

namespace lockstep::train {

absl::StatusOr<double> PlannedTrainingBytes(const Layer& net, int64_t per_rank,
                                            const Shape& image_shape) {
  LS_ASSIGN_OR_RETURN(NetGraph built, BuildNetGraph(net, SoftmaxCrossEntropy(), Mode::kTrain,
                                                    per_rank, image_shape));
  CompileOptions options;
  options.autodiff = AutodiffOptions{.loss = "loss"};
  LS_ASSIGN_OR_RETURN(const MemoryPlanSizes plan, PlanMemory(*built.graph, options));
  return static_cast<double>(plan.arena + plan.inputs + plan.parameters + plan.gradients +
                             plan.state);
}

absl::Status CheckTrainingMemory(const Layer& net, int64_t per_rank, const Shape& image_shape,
                                 int local_ranks, const JobWording& wording, FitsInMemory fits) {
  const std::string sized_by =
      absl::StrFormat("%s with %s (%d images a rank, %d rank(s) on this host)", wording.image_size,
                      wording.batch_size, per_rank, local_ranks);
  // The input batch alone first, in floating point: its element count may not fit an int64.
  double input_bytes = static_cast<double>(per_rank);
  for (const int64_t extent : image_shape) input_bytes *= static_cast<double>(extent);
  LS_RETURN_IF_ERROR(fits(input_bytes * sizeof(float), local_ranks,
                          absl::StrCat("the input batch of ", sized_by)));
  absl::StatusOr<double> planned = PlannedTrainingBytes(net, per_rank, image_shape);
  if (!planned.ok()) {
    return Annotate(planned.status(), absl::StrCat(wording.model, " at ", wording.image_size));
  }
  return fits(*planned, local_ranks,
              absl::StrCat(wording.model, "'s training graph at ", sized_by));
}

absl::Status CheckStepsPerEpoch(int64_t samples, int64_t batches, int64_t per_rank,
                                int64_t accumulation_steps, const JobWording& wording) {
  const std::string held_out =
      wording.held_out.empty() ? "" : absl::StrCat(" (", wording.held_out, " held out the rest)");
  if (batches == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s makes batches of %d images a rank, but a rank's share of %s is %d image(s)%s: not one "
        "training step per epoch",
        wording.batch_size, per_rank, wording.train_set, samples, held_out));
  }
  if (batches < accumulation_steps) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s needs %d batches for one update, but an epoch has %d batch(es) of %d images a rank%s: "
        "not one optimizer step per epoch",
        wording.grad_accum, accumulation_steps, batches, per_rank, held_out));
  }
  return absl::OkStatus();
}

// What every rank must read alike before the first step: a rank with an incomplete copy of the
// data set would take other step counts and labels, and its collectives would meet the others'
// mismatched. The class list goes by its count, ends and CRC-32.
absl::Status AgreeOnDataSet(const dataset::Dataset& train, const dataset::Dataset* val,
                            const JobWording& wording, parallel::Communicator& world) {
  const std::vector<std::string> classes = train.class_names();
  const std::string names = absl::StrJoin(classes, "/");
  const uLong crc =
      crc32(0L, reinterpret_cast<const Bytef*>(names.data()), static_cast<uInt>(names.size()));
  const std::vector<parallel::Setting> settings = {
      {absl::StrCat("images in ", wording.train_set), absl::StrCat(train.plan().source->size())},
      {"validation images", val == nullptr ? "none" : absl::StrCat(val->plan().source->size())},
      {"classes", classes.empty()
                      ? "none"
                      : absl::StrCat(classes.size(), " (", classes.front(), " .. ", classes.back(),
                                     ", CRC-32 ", absl::Hex(crc, absl::kZeroPad8), ")")}};
  return parallel::AgreeOnSettings(settings, world, "the ranks read different data sets");
}

}  // namespace lockstep::train
