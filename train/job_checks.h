#pragma once

// The start-up checks of a training job, from plain values, so that every front end
// (lockstep-train, the Python module) refuses the same jobs for the same reasons before any
// work. The messages name the settings as the caller words them (JobWording).
//
//   JobWording wording{.model = "resnet8", .image_size = "image_size=32", ...};
//   LS_RETURN_IF_ERROR(CheckStepsPerEpoch(train.SamplesPerEpoch(), train.BatchesPerEpoch(),
//                                         per_rank, accumulation_steps, wording));
//   LS_RETURN_IF_ERROR(CheckTrainingMemory(*net, per_rank, {3, 32, 32}, local_ranks, wording,
//                                          CheckFitsInMemory));

#include <cstdint>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "core/status.h"
#include "core/tensor.h"
#include "dataset/dataset.h"
#include "parallel/communicator.h"
#include "train/layers.h"

namespace lockstep::train {

// How the messages name the job's settings: a flag and its value for lockstep-train, a keyword
// argument for the Python module.
struct JobWording {
  std::string model;       // "resnet8"
  std::string image_size;  // "--image-size 64"
  std::string batch_size;  // "--batch-size 40": the global batch that makes the per-rank one
  std::string grad_accum;  // "--grad-accum 6"
  std::string train_set;   // "DIR/train"
  // "--val-fraction 0.2": the setting that held part of the training set out; empty for none.
  std::string held_out;
};

// The memory plan of `net`'s training graph (forward and backward, without the optimizer and the
// gradient AllReduce, which add little) for batches of `per_rank` images of `image_shape`
// (C, H, W), in bytes, made as Compile makes it but not allocated.
absl::StatusOr<double> PlannedTrainingBytes(const Layer& net, int64_t per_rank,
                                            const Shape& image_shape);

// Refuses `bytes_per_rank` on each of `ranks_on_host` processes when this host cannot hold them,
// naming `what`: CheckFitsInMemory (examples/flag_checks.h).
using FitsInMemory = absl::FunctionRef<absl::Status(double bytes_per_rank, int ranks_on_host,
                                                    absl::string_view what)>;

// Whether `local_ranks` ranks on this host, each training `net` on `per_rank` images of
// `image_shape`, fit in its memory (`fits`): first the float32 input batch alone, then the
// training graph's memory plan (CPU training; a GPU's allocator refuses what does not fit).
absl::Status CheckTrainingMemory(const Layer& net, int64_t per_rank, const Shape& image_shape,
                                 int local_ranks, const JobWording& wording, FitsInMemory fits);

// At least one optimizer step per epoch: a rank's `samples` make `batches` of `per_rank` images,
// `accumulation_steps` of them an update.
absl::Status CheckStepsPerEpoch(int64_t samples, int64_t batches, int64_t per_rank,
                                int64_t accumulation_steps, const JobWording& wording);

// Collective over `world`: OK when every rank reads the same data set (image counts, class list),
// else the agreed error naming what differs on which ranks. `val` is null without validation.
absl::Status AgreeOnDataSet(const dataset::Dataset& train, const dataset::Dataset* val,
                            const JobWording& wording, parallel::Communicator& world);

}  // namespace lockstep::train
