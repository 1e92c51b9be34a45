// lockstep-train: data-parallel training on an ImageFolder tree (DIR/train and DIR/val, one
// sub-directory per class), evaluation after every epoch, per-rank checkpoints and resume.
//
//   mpirun -n 4 lockstep-train --data DIR --model resnet8 --epochs 6 --ckpt-dir ckpt
//
// Each rank reads its shard of the training set (num_shards = world size, shard_id = rank) with
// --batch-size / world images per step; the gradients are averaged over the ranks. Evaluation is
// exact across ranks: every rank scores its share of the validation set, each image once, and
// the counts are summed. Rank 0 prints the loss lines and one line per epoch and, with
// --summary-dir, writes the metrics as JSON lines, TensorBoard events and a PNG of the curves.
//
// Start-up checks, on every rank before any work, agreed so that one line speaks for all ranks:
// each numeric flag against its range (examples/flag_checks.h), then their combinations, the
// options the ranks must share, the steps an epoch can take and the memory the run needs once
// the data and the model are known. Every refusal names the flag, the value and what is
// accepted. A run that applied no optimizer update exits 1 saying why.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "core/logging.h"
#include "core/paths.h"
#include "core/threads.h"
#include "dataset/image_folder.h"
#include "examples/env_options.h"
#include "examples/flag_checks.h"
#include "examples/precision_flags.h"
#include "examples/termination.h"
#include "examples/train_flags.h"
#include "parallel/agree.h"
#include "parallel/context.h"
#include "train/checkpoint_callback.h"
#include "train/dataset_source.h"
#include "train/job_checks.h"
#include "train/job_run.h"
#include "train/loss.h"
#include "train/model.h"
#include "train/models.h"
#include "train/progress_bar.h"
#include "train/summary/summary_callback.h"

namespace lockstep::train {
namespace {

// How the start-up checks name the flags they refuse (after PrepareJob filled in --image-size).
JobWording Wording(const Flags& f) {
  return {.model = f.model,
          .image_size = absl::StrCat("--image-size ", f.image_size),
          .batch_size = absl::StrCat("--batch-size ", f.batch_size),
          .grad_accum = absl::StrCat("--grad-accum ", f.grad_accum),
          .train_set = f.data + "/train",
          .held_out = f.val_fraction > 0.0
                          ? absl::StrCat("--val-fraction ", Shortest(f.val_fraction))
                          : ""};
}

struct Data {
  std::unique_ptr<DatasetSource> train;
  std::unique_ptr<DatasetSource> val;  // null: training without evaluation
  int64_t classes = 0;
};

// DIR/val when it exists; otherwise a held-out share of DIR/train (--val-fraction), or nothing.
absl::StatusOr<std::optional<dataset::Dataset>> OpenValidation(const Flags& f,
                                                               dataset::ImageFolderOptions options,
                                                               const dataset::Dataset& train) {
  options.shuffle = false;
  options.uneven_tail = true;  // every validation image once over all ranks
  const std::string val_dir = f.data + "/val";
  if (!std::filesystem::exists(val_dir)) {
    if (f.val_fraction == 0.0) return std::nullopt;
    options.hold_out.read_held_out = true;
    return dataset::ImageFolder(f.data + "/train", options);
  }
  if (f.val_fraction > 0.0) {
    return absl::InvalidArgumentError(absl::StrCat("--val-fraction holds out a share of ", f.data,
                                                   "/train for a tree without val/, but ", val_dir,
                                                   " exists"));
  }
  LS_ASSIGN_OR_RETURN(dataset::Dataset val, dataset::ImageFolder(val_dir, options));
  if (train.class_names() != val.class_names()) {
    return absl::InvalidArgumentError(
        absl::StrCat(f.data, "/train and ", val_dir, " must hold the same class folders"));
  }
  return val;
}

// Batches as the model takes them: normalized by the pipeline's workers, or left uint8 for a
// device that normalizes them itself; in host memory its copies read without the host waiting.
absl::StatusOr<Data> OpenData(const Flags& f, const parallel::Context& ctx,
                              const ModelOptions& model) {
  const int64_t per_rank = model.batch_size;
  const bool normalized = !model.normalize_images.has_value();
  const dataset::BatchAllocator allocator = HostBatchAllocator(model.device);
  dataset::ImageFolderOptions options{.num_shards = ctx.size(),
                                      .shard_id = ctx.rank(),
                                      .seed = f.seed,
                                      .hold_out = {.fraction = f.val_fraction, .seed = f.seed}};
  LS_ASSIGN_OR_RETURN(dataset::Dataset train, dataset::ImageFolder(f.data + "/train", options));
  LS_ASSIGN_OR_RETURN(std::optional<dataset::Dataset> val, OpenValidation(f, options, train));
  Data data;
  data.classes = static_cast<int64_t>(train.class_names().size());
  data.train = std::make_unique<DatasetSource>(
      train.Map(ClassificationTransforms(f.image_size, true, normalized))
          .Batch(per_rank, /*drop_remainder=*/true)
          .Workers(f.workers)
          .AllocateWith(allocator));
  if (val.has_value()) {
    data.val = std::make_unique<DatasetSource>(
        val->Map(ClassificationTransforms(f.image_size, false, normalized))
            .Batch(per_rank)
            .Workers(f.workers)
            .AllocateWith(allocator));
  }
  return data;
}

LrSchedule Schedule(const Flags& f, int64_t steps_per_epoch) {
  const int64_t total = f.epochs * steps_per_epoch;
  const int64_t warmup = static_cast<int64_t>(f.warmup_epochs * steps_per_epoch);
  const int64_t step_epochs = f.lr_step_epochs > 0 ? f.lr_step_epochs : (f.epochs + 2) / 3;
  LrSchedule after = f.lr_schedule == "cosine" ? CosineLr(f.lr, total - warmup)
                     : f.lr_schedule == "step" ? StepLr(f.lr, step_epochs * steps_per_epoch, 0.1)
                                               : ConstantLr(f.lr);
  return warmup > 0 ? WarmupLr(warmup, after) : after;
}

absl::StatusOr<ModelOptions> MakeModelOptions(const Flags& f, const parallel::Context& ctx,
                                              const EnvOptions& env) {
  ModelOptions options{.batch_size = f.batch_size / ctx.size(),
                       .image_shape = {3, f.image_size, f.image_size},
                       .seed = f.seed,
                       .num_threads = f.threads,
                       .accumulation_steps = f.grad_accum,
                       .context = ctx,
                       .dump_dir = env.dump_dir};
  options.config.Set(env.math);
  if (f.loss_scale == "dynamic") {
    options.dynamic_loss_scale = f.dynamic_scale;
  } else {
    options.loss_scale = FixedLossScale(f);
  }
  LS_ASSIGN_OR_RETURN(options.device, ctx.DeviceFor(f.device));
  options.replay_steps = f.cuda_graph == "on";
  // A GPU takes its batches as uint8 and normalizes them itself; on the CPU the pipeline's
  // workers normalize, off the step's critical path.
  if (options.device.type != DeviceType::kCPU) {
    options.normalize_images =
        ImageNormalization{.mean = std::vector<float>(3, kClassificationMean),
                           .std = std::vector<float>(3, kClassificationStd)};
  }
  if (ctx.size() > 1) {
    options.parallel = {.mode = parallel::ParallelMode::kDataParallel,
                        .fusion_threshold_mb = f.fusion_mb,
                        .sync_batch_norm = f.sync_bn,
                        .overlap_communication = env.overlap_communication};
  }
  ApplyPrecisionFlags(f.precision, options);
  return options;
}

// Rank 0 shows a progress bar to a person at a terminal and prints loss lines to logs.
std::shared_ptr<Callback> MakeProgress(const Flags& f, const parallel::Context& ctx,
                                       int64_t steps_per_epoch) {
  const bool bar =
      f.progress == "bar" || (f.progress == "auto" && OutputReachesTerminal(ctx.launched_by_mpi()));
  if (bar) return std::make_shared<ProgressBar>(f.epochs, steps_per_epoch, ctx.size());
  return f.log_every > 0 ? std::make_shared<LossMonitor>(f.log_every) : nullptr;
}

Callbacks MakeCallbacks(const Flags& f, const Data& data, const parallel::Context& ctx,
                        int64_t steps_per_epoch, const std::shared_ptr<SummaryCallback>& summary) {
  const std::shared_ptr<parallel::Communicator> world = ctx.HostWorld();
  Callbacks callbacks = {std::make_shared<TerminateOnNaN>(world)};
  if (ctx.rank() == 0) {
    if (std::shared_ptr<Callback> progress = MakeProgress(f, ctx, steps_per_epoch)) {
      callbacks.push_back(std::move(progress));
    }
  }
  if (!f.ckpt_dir.empty()) {
    callbacks.push_back(std::make_shared<ModelCheckpoint>(
        ckpt::CheckpointConfig{.save_checkpoint_steps = f.save_steps,
                               .save_checkpoint_epochs = f.save_epochs,
                               .keep_checkpoint_max = f.keep_max,
                               .directory = f.ckpt_dir,
                               .recipe = ResumeRecipe(f)},
        f.model, world,
        f.on_save_error == "stop" ? SaveErrorPolicy::kStop : SaveErrorPolicy::kContinue));
  }
  if (summary != nullptr) callbacks.push_back(summary);
  callbacks.push_back(std::make_shared<EpochReport>(data.val.get(), f.epochs, world, summary));
  return callbacks;
}

// What each rank checks on its own before the first collective: the flags, the data folders,
// the model's name and, on rank 0, the summary directory.
struct Job {
  ModelOptions options;
  Data data;
  LayerPtr net;
  std::shared_ptr<SummaryCallback> summary;  // rank 0 with --summary-dir only
  bool model_image_size = false;             // --image-size left to the model's
};

// Where the epoch's validation comes from, when not from DIR/val.
std::string ValidationLine(const Flags& f, const Data& data) {
  if (f.val_fraction > 0.0) {
    // The share actually held out: each class rounds its own count.
    const int64_t held_out = data.val->dataset().plan().source->size();
    const int64_t all = held_out + data.train->dataset().plan().source->size();
    return absl::StrFormat(
        "%svalidating on %d of the %d images of %s/train (%.1f%%), held out per class for "
        "--val-fraction %s\n",
        LogPrefix(), held_out, all, f.data, 100.0 * static_cast<double>(held_out) / all,
        Shortest(f.val_fraction));
  }
  if (std::filesystem::exists(f.data + "/val")) return "";
  return absl::StrCat(LogPrefix(), "no ", f.data,
                      "/val: training without evaluation (--val-fraction F holds out a share of ",
                      f.data, "/train for it)\n");
}

// Fills in the flags left to the model (the image size) and checks the rest.
absl::StatusOr<Job> PrepareJob(Flags& f, const parallel::Context& ctx, const EnvOptions& env) {
  Job job;
  // Checkpoints and summaries never land on the images they are made from.
  LS_RETURN_IF_ERROR(
      CheckOutputsAreNotInputs({{"--ckpt-dir", f.ckpt_dir}, {"--summary-dir", f.summary_dir}},
                               {{"--data", f.data},
                                {"--data's train/", f.data + "/train", true},
                                {"--data's val/", f.data + "/val", true}}));
  if (f.image_size <= 0) {
    LS_ASSIGN_OR_RETURN(f.image_size, models::DefaultImageSize(f.model));
    job.model_image_size = true;
  }
  LS_ASSIGN_OR_RETURN(job.options, MakeModelOptions(f, ctx, env));
  LS_ASSIGN_OR_RETURN(job.data, OpenData(f, ctx, job.options));
  const dataset::Dataset& train = job.data.train->dataset();
  const JobWording wording = Wording(f);
  LS_RETURN_IF_ERROR(CheckStepsPerEpoch(train.SamplesPerEpoch(), train.BatchesPerEpoch(),
                                        job.options.batch_size, f.grad_accum, wording));
  LS_ASSIGN_OR_RETURN(job.net, models::ModelByName(f.model, job.data.classes));
  // On a GPU the device's allocator refuses what does not fit, naming the bytes.
  if (job.options.device.type == DeviceType::kCPU) {
    LS_RETURN_IF_ERROR(CheckTrainingMemory(*job.net, job.options.batch_size,
                                           job.options.image_shape, ctx.local_size(), wording,
                                           CheckFitsInMemory));
  }
  if (ctx.rank() == 0 && !f.summary_dir.empty()) {
    // A record every --log-every steps, as the loss lines (every step when those are off).
    LS_ASSIGN_OR_RETURN(job.summary,
                        SummaryCallback::Create({.directory = f.summary_dir,
                                                 .every_steps = std::max<int64_t>(1, f.log_every),
                                                 .world_size = ctx.size()}));
  }
  return job;
}

void PrintStartLine(const Flags& f, const parallel::Context& ctx, const Job& job,
                    const Model& model, int64_t steps_per_epoch) {
  std::cout << LogPrefix()
            << absl::StrFormat(
                   "%s, %d parameters, %d classes, %dx%d images (%s), %d rank(s) x %d images "
                   "on %s, %d thread(s) each, %d steps per epoch; %s\n",
                   f.model, CountParameters(model.parameters()), job.data.classes, f.image_size,
                   f.image_size, job.model_image_size ? "the model's size" : "--image-size",
                   ctx.size(), job.options.batch_size,
                   job.options.device.type == DeviceType::kCPU ? "cpu" : "cuda", f.threads,
                   steps_per_epoch, PrecisionLine(job.options))
            << ValidationLine(f, job.data) << std::flush;
}

absl::Status Run(Flags f, const parallel::Context& ctx, const EnvOptions& env) {
  ExplainTermination(f.ckpt_dir);
  if (f.threads <= 0) f.threads = DefaultThreads(ctx.local_size());
  if (f.workers <= 0) f.workers = f.threads;
  absl::StatusOr<Job> job = PrepareJob(f, ctx, env);
  // A set-up error is printed once for all ranks, not once by each.
  LS_RETURN_IF_ERROR(parallel::AgreeAcrossRanks(job.status(), *ctx.HostWorld()));
  LS_RETURN_IF_ERROR(AgreeOnDataSet(job->data.train->dataset(),
                                    job->data.val == nullptr ? nullptr : &job->data.val->dataset(),
                                    Wording(f), *ctx.HostWorld()));
  const int64_t steps_per_epoch = job->data.train->dataset().BatchesPerEpoch() / f.grad_accum;
  Model model(job->net, SoftmaxCrossEntropy(),
              Momentum{.lr = Schedule(f, steps_per_epoch),
                       .momentum = f.momentum,
                       .weight_decay = f.weight_decay},
              job->options);
  LS_RETURN_IF_ERROR(model.Compile());
  // Before resume: the directory this run writes exists (a relaunch may resume from it) and no
  // other job writes there.
  std::shared_ptr<ckpt::DirectoryLock> lock;
  if (!f.ckpt_dir.empty()) {
    LS_ASSIGN_OR_RETURN(
        lock, LockCheckpointDirectory(f.ckpt_dir, /*writes_here=*/true, *ctx.HostWorld()));
  }
  if (!f.resume.empty()) {
    LS_RETURN_IF_ERROR(
        ResumeOrStartFresh(model, f.resume, f.model, ctx.HostWorld(), ResumeRecipe(f)));
  }
  if (ctx.rank() == 0) {
    PrintStartLine(f, ctx, *job, model, steps_per_epoch);
    for (const std::string& line : IneffectiveFlags(f, ctx, model)) {
      std::cout << LogPrefix() << "note: " << line << "\n";
    }
    std::cout << std::flush;
  }
  const int64_t epochs = f.epochs - model.epochs_done();
  if (epochs <= 0) {
    // A relaunch of a finished run: not an error, so that relaunch loops end.
    if (ctx.rank() == 0) {
      std::cout << LogPrefix() << "nothing left to train: " << model.epochs_done()
                << " epoch(s) done in " << f.resume << ", --epochs " << f.epochs << std::endl;
    }
    return absl::OkStatus();
  }
  Callbacks callbacks = MakeCallbacks(f, job->data, ctx, steps_per_epoch, job->summary);
  auto updates = std::make_shared<UpdateCounter>();
  callbacks.push_back(updates);
  LS_RETURN_IF_ERROR(model.Train(epochs, *job->data.train, callbacks));
  LS_ASSIGN_OR_RETURN(const double loss_scale, model.LossScale());
  // Every rank counts the same updates: they skip alike and end alike.
  return parallel::AgreeAcrossRanks(updates->Outcome(epochs, loss_scale), *ctx.HostWorld());
}

// The command line, checked on every rank before any work and agreed: one message for all
// ranks when a rank's flags are refused or the ranks' options differ. False after --help.
absl::StatusOr<bool> CheckCommandLine(const CLI::App& app,
                                      const absl::StatusOr<ParseOutcome>& parsed, const Flags& f,
                                      const parallel::Context& ctx, const EnvOptions& env) {
  const std::shared_ptr<parallel::Communicator> world = ctx.HostWorld();
  const bool help = parsed.ok() && *parsed == ParseOutcome::kHelp;
  absl::Status local = parsed.status();
  if (parsed.ok() && !help) local = CheckFlags(app, f, ctx.size());
  LS_RETURN_IF_ERROR(parallel::AgreeAcrossRanks(local, *world));
  LS_RETURN_IF_ERROR(parallel::AgreeOnSettings(
      SettingsThatMustMatch(f, env, help), *world,
      "the ranks were started with different options, which they must share"));
  if (help) {
    if (ctx.rank() == 0) std::cout << app.help();
    return false;
  }
  const std::string warning = OversubscriptionWarning(f, ctx.local_size());
  if (ctx.rank() == 0 && !warning.empty()) LS_LOG(Warning) << warning;
  return true;
}

}  // namespace
}  // namespace lockstep::train

int main(int argc, char** argv) {
  absl::StatusOr<lockstep::StartedRank> started = lockstep::StartRank(&argc, &argv);
  if (!started.ok()) return lockstep::parallel::ReportFatal(started.status());
  const lockstep::parallel::Context& ctx = started->context;
  const lockstep::EnvOptions& env = started->env;
  lockstep::train::Flags flags;
  CLI::App app{"Data-parallel training on an ImageFolder tree, with checkpoints and resume."};
  lockstep::train::AddFlags(app, flags);
  const absl::StatusOr<lockstep::ParseOutcome> parsed = lockstep::ParseCommandLine(app, argc, argv);
  absl::StatusOr<bool> run = lockstep::train::CheckCommandLine(app, parsed, flags, ctx, env);
  absl::Status status = run.status();
  try {
    if (status.ok() && *run) status = lockstep::train::Run(flags, ctx, env);
  } catch (const std::bad_alloc&) {
    // A last resort: the start-up checks refuse the sizes that cannot fit.
    status = absl::ResourceExhaustedError(absl::StrFormat(
        "out of memory training with --image-size %d and --batch-size %d: lower them",
        flags.image_size, flags.batch_size));
  }
  if (!status.ok()) return lockstep::parallel::ReportFatal(status);
  return 0;
}
