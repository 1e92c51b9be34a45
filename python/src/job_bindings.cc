// The start-up checks lockstep-train makes (train/job_checks.h, parallel/agree.h), made for a
// Python Model before its first step: every rank refuses the same job with one message, instead
// of ranks that meet mismatched collectives.

#include <pybind11/stl.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "examples/flag_checks.h"
#include "parallel/agree.h"
#include "parallel/context.h"
#include "python/src/bindings.h"
#include "python/src/pipeline.h"
#include "train/job_checks.h"

namespace lockstep::python {
namespace py = pybind11;
namespace {

struct JobChecks {
  std::shared_ptr<train::Layer> net;
  std::string model_name;  // the network's class, for the messages
  std::string data_name;   // the training data set, for the messages
  bool on_cpu;
  std::vector<parallel::Setting> settings;  // what every rank must share
};

// Each rank's own checks, then the agreements; one error for all ranks. `image_shape` is the
// batches' (C, H, W), as BatchShape found it.
absl::Status Check(const JobChecks& job, const Pipeline& train, const Shape& image_shape,
                   const parallel::Context& ctx) {
  const dataset::Dataset& data = train.dataset;
  const int64_t per_rank = data.plan().batch_size;
  const train::JobWording wording{.model = job.model_name,
                                  .image_size = "the data set's images",
                                  .batch_size = absl::StrCat("batch(", per_rank, ")"),
                                  .grad_accum = "gradient accumulation",
                                  .train_set = job.data_name};
  absl::Status local = train::CheckStepsPerEpoch(data.SamplesPerEpoch(), data.BatchesPerEpoch(),
                                                 per_rank, 1, wording);
  if (local.ok() && job.on_cpu) {
    local = train::CheckTrainingMemory(*job.net, per_rank, image_shape, ctx.local_size(), wording,
                                       CheckFitsInMemory);
  }
  parallel::Communicator& world = *ctx.HostWorld();
  LS_RETURN_IF_ERROR(parallel::AgreeAcrossRanks(local, world));
  LS_RETURN_IF_ERROR(parallel::AgreeOnSettings(
      job.settings, world, "the ranks' scripts set up different models, which they must share"));
  return train::AgreeOnDataSet(data, nullptr, wording, world);
}

}  // namespace

void BindJob(py::module_& m) {
  m.def(
      "check_job",
      [](std::shared_ptr<train::Layer> net, std::string model_name, std::string data_name,
         bool on_cpu, std::vector<parallel::Setting> settings, const Pipeline& train,
         std::vector<int64_t> image_shape, const parallel::Context& ctx) {
        const JobChecks job{std::move(net), std::move(model_name), std::move(data_name), on_cpu,
                            std::move(settings)};
        absl::Status status;
        {
          py::gil_scoped_release release;  // tracing the net for its memory plan takes it back
          status = Check(job, train, Shape(image_shape.begin(), image_shape.end()), ctx);
        }
        RaiseIfError(status);
      },
      py::arg("net"), py::arg("model_name"), py::arg("data_name"), py::arg("on_cpu"),
      py::arg("settings"), py::arg("train"), py::arg("image_shape"), py::arg("context"),
      "Collective: lockstep-train's start-up checks for a Python model; one error on every rank.");
}

}  // namespace lockstep::python
