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

#include <zlib.h>

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
#include "absl/strings/str_join.h"
#include "core/logging.h"
#include "core/paths.h"
#include "core/threads.h"
#include "dataset/image_folder.h"
#include "examples/env_options.h"
#include "examples/flag_checks.h"
#include "examples/precision_flags.h"
#include "examples/termination.h"
#include "examples/train_flags.h"
#include "graph/passes/passes.h"
#include "parallel/agree.h"
#include "parallel/context.h"
#include "train/checkpoint_callback.h"
#include "train/dataset_source.h"
#include "train/loss.h"
#include "train/model.h"
#include "train/models.h"
#include "train/progress_bar.h"
#include "train/summary/summary_callback.h"

namespace lockstep::train {
namespace {

// The memory plan of the training graph (forward and backward, without the optimizer and the
// gradient AllReduce, which add little), made as Compile makes it but not allocated.
absl::StatusOr<double> PlannedBytes(const Flags& f, const Layer& net, int64_t per_rank) {
  absl::StatusOr<NetGraph> built = BuildNetGraph(net, SoftmaxCrossEntropy(), Mode::kTrain, per_rank,
                                                 {3, f.image_size, f.image_size});
  if (!built.ok()) {
    return Annotate(built.status(), absl::StrCat(f.model, " at --image-size ", f.image_size));
  }
  Graph& graph = *built->graph;
  PassContext ctx;
  ctx.autodiff.loss = "loss";
  PassManager passes;
  passes.Add(CreateAutodiffPass())
      .Add(CreateFuseKernelsPass())
      .Add(CreateDeadCodeElimPass())
      .Add(CreateAssignLayoutsPass())
      .Add(CreateMemoryPlanPass());
  LS_RETURN_IF_ERROR(passes.Run(graph, ctx));
  const MemoryPlanSizes& plan = graph.plan();
  return static_cast<double>(plan.arena + plan.inputs + plan.parameters + plan.gradients +
                             plan.state);
}

// At least one optimizer step per epoch: `batches` of `per_rank` images a rank per epoch (its
// `samples`), --grad-accum of them an update.
absl::Status CheckStepsPerEpoch(const Flags& f, int64_t samples, int64_t batches,
                                int64_t per_rank) {
  const std::string held_out =
      f.val_fraction > 0.0
          ? absl::StrCat(" (--val-fraction ", Shortest(f.val_fraction), " held out the rest)")
          : "";
  if (batches == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--batch-size %d makes batches of %d images a rank, but a rank's share of %s/train is %d "
        "image(s)%s: not one training step per epoch",
        f.batch_size, per_rank, f.data, samples, held_out));
  }
  if (batches < f.grad_accum) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--grad-accum %d needs %d batches for one update, but an epoch has %d batch(es) of %d "
        "images a rank%s: not one optimizer step per epoch",
        f.grad_accum, f.grad_accum, batches, per_rank, held_out));
  }
  return absl::OkStatus();
}

// The memory plan of `net`'s training graph for `per_rank` images of f.image_size, on each of
// the `local_ranks` ranks of this host, fits in the host's available memory (CPU training).
absl::Status CheckMemory(const Flags& f, const Layer& net, int64_t per_rank, int local_ranks) {
  const std::string sized_by = absl::StrFormat(
      "--image-size %d with --batch-size %d (%d images a rank, %d rank(s) on this "
      "host)",
      f.image_size, f.batch_size, per_rank, local_ranks);
  // The input batch alone first, in floating point: its element count may not fit an int64.
  const double side = static_cast<double>(f.image_size);
  LS_RETURN_IF_ERROR(
      CheckFitsInMemory(static_cast<double>(per_rank) * 3.0 * side * side * sizeof(float),
                        local_ranks, absl::StrCat("the input batch of ", sized_by)));
  LS_ASSIGN_OR_RETURN(const double bytes, PlannedBytes(f, net, per_rank));
  return CheckFitsInMemory(bytes, local_ranks,
                           absl::StrCat(f.model, "'s training graph at ", sized_by));
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

// What every rank must read alike, agreed before the first step: a rank with an incomplete copy
// of the data set would take other step counts and labels, and its collectives would meet the
// others' mismatched. The class list goes by its count, ends and CRC-32.
std::vector<parallel::Setting> DataSettings(const Flags& f, const Data& data) {
  const dataset::Dataset& train = data.train->dataset();
  const std::vector<std::string> classes = train.class_names();
  const std::string names = absl::StrJoin(classes, "/");
  const uLong crc =
      crc32(0L, reinterpret_cast<const Bytef*>(names.data()), static_cast<uInt>(names.size()));
  return {{absl::StrCat("images in ", f.data, "/train"), absl::StrCat(train.plan().source->size())},
          {"validation images",
           data.val == nullptr ? "none" : absl::StrCat(data.val->dataset().plan().source->size())},
          {"classes", classes.empty() ? "none"
                                      : absl::StrCat(classes.size(), " (", classes.front(), " .. ",
                                                     classes.back(), ", CRC-32 ",
                                                     absl::Hex(crc, absl::kZeroPad8), ")")}};
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

// After every epoch: evaluates on all ranks; rank 0 prints the epoch's line and hands the
// result to the summary (--summary-dir).
class EpochReport : public Callback {
 public:
  EpochReport(DataSource* val, int64_t epochs, std::shared_ptr<parallel::Communicator> world,
              std::shared_ptr<SummaryCallback> summary)
      : val_(val), epochs_(epochs), world_(std::move(world)), summary_(std::move(summary)) {}

  absl::Status OnEpochEnd(Model& model, const EpochInfo& epoch) override {
    std::optional<EvalResult> eval;
    if (val_ != nullptr) {
      LS_ASSIGN_OR_RETURN(eval, model.Eval(*val_));
    }
    if (world_->rank() == 0) {
      const double images = static_cast<double>(epoch.images * world_->size());
      std::cout << absl::StrFormat("epoch %d/%d: train loss %.4f, ", epoch.epoch, epochs_,
                                   epoch.mean_loss);
      if (eval.has_value()) {
        std::cout << absl::StrFormat("val accuracy %.4f (%d/%d), val loss %.4f, ", eval->accuracy,
                                     eval->correct, eval->samples, eval->loss);
      }
      std::cout << absl::StrFormat("%.1f images/s, %.1f s\n",
                                   epoch.seconds > 0 ? images / epoch.seconds : 0.0, epoch.seconds)
                << std::flush;
    }
    if (summary_ == nullptr || !eval.has_value()) return absl::OkStatus();
    return summary_->AddEval(epoch.epoch, model.global_step(), *eval);
  }

 private:
  DataSource* val_;  // null: no evaluation
  int64_t epochs_;
  std::shared_ptr<parallel::Communicator> world_;
  std::shared_ptr<SummaryCallback> summary_;  // rank 0 with --summary-dir only
};

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
  LS_RETURN_IF_ERROR(CheckStepsPerEpoch(f, train.SamplesPerEpoch(), train.BatchesPerEpoch(),
                                        job.options.batch_size));
  LS_ASSIGN_OR_RETURN(job.net, models::ModelByName(f.model, job.data.classes));
  // On a GPU the device's allocator refuses what does not fit, naming the bytes.
  if (job.options.device.type == DeviceType::kCPU) {
    LS_RETURN_IF_ERROR(CheckMemory(f, *job.net, job.options.batch_size, ctx.local_size()));
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

// Counts the optimizer updates applied: steps that ended a gradient accumulation and were not
// skipped for non-finite gradients (dynamic loss scaling).
class UpdateCounter : public Callback {
 public:
  absl::Status OnStepEnd(Model& model, const StepInfo& step) override {
    ++steps_;
    if (model.global_step() == step.global_step && !step.update_skipped) ++updates_;
    return absl::OkStatus();
  }
  // Why a run of `epochs` applied no update; OK when it applied one.
  absl::Status Outcome(int64_t epochs, double loss_scale) const {
    if (updates_ > 0) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(
        "trained ", epochs, " epoch(s) without applying one optimizer update: ",
        steps_ == 0 ? "no training step ran"
                    : absl::StrCat("every update of ", steps_,
                                   " step(s) was skipped for non-finite gradients (loss scale "
                                   "now ",
                                   loss_scale, ")")));
  }

 private:
  int64_t steps_ = 0;
  int64_t updates_ = 0;
};

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

// --resume: the newest complete step of f.resume, or a fresh start when it holds none.
absl::Status Resume(const Flags& f, const parallel::Context& ctx, Model& model) {
  const std::shared_ptr<parallel::Communicator> world = ctx.HostWorld();
  absl::StatusOr<bool> resumed =
      ResumeFromCheckpoint(model, f.resume, f.model, world, ResumeRecipe(f));
  // Another model's checkpoints, or another image size's, every rank finds alike.
  LS_RETURN_IF_ERROR(parallel::AgreeAcrossRanks(resumed.status(), *world));
  if (ctx.rank() == 0) {
    std::cout << LogPrefix()
              << (*resumed ? absl::StrFormat("resumed at step %d, %d epoch(s) done",
                                             model.global_step(), model.epochs_done())
                           : absl::StrCat("nothing to resume in ", f.resume, "; starting fresh"))
              << std::endl;
  }
  return absl::OkStatus();
}

absl::Status Run(Flags f, const parallel::Context& ctx, const EnvOptions& env) {
  ExplainTermination(f.ckpt_dir);
  if (f.threads <= 0) f.threads = DefaultThreads(ctx.local_size());
  if (f.workers <= 0) f.workers = f.threads;
  absl::StatusOr<Job> job = PrepareJob(f, ctx, env);
  // A set-up error is printed once for all ranks, not once by each.
  LS_RETURN_IF_ERROR(parallel::AgreeAcrossRanks(job.status(), *ctx.HostWorld()));
  LS_RETURN_IF_ERROR(parallel::AgreeOnSettings(DataSettings(f, job->data), *ctx.HostWorld(),
                                               "the ranks read different data sets"));
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
  if (!f.resume.empty()) LS_RETURN_IF_ERROR(Resume(f, ctx, model));
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
  absl::StatusOr<lockstep::EnvOptions> env = lockstep::ReadEnvOptions();
  if (!env.ok()) return lockstep::parallel::ReportFatal(env.status());
  absl::StatusOr<lockstep::parallel::Context> ctx =
      lockstep::parallel::Init(&argc, &argv, env->init);
  if (!ctx.ok()) return lockstep::parallel::ReportFatal(ctx.status());
  lockstep::train::Flags flags;
  CLI::App app{"Data-parallel training on an ImageFolder tree, with checkpoints and resume."};
  lockstep::train::AddFlags(app, flags);
  const absl::StatusOr<lockstep::ParseOutcome> parsed = lockstep::ParseCommandLine(app, argc, argv);
  absl::StatusOr<bool> run = lockstep::train::CheckCommandLine(app, parsed, flags, *ctx, *env);
  absl::Status status = run.status();
  try {
    if (status.ok() && *run) status = lockstep::train::Run(flags, *ctx, *env);
  } catch (const std::bad_alloc&) {
    // A last resort: the start-up checks refuse the sizes that cannot fit.
    status = absl::ResourceExhaustedError(absl::StrFormat(
        "out of memory training with --image-size %d and --batch-size %d: lower them",
        flags.image_size, flags.batch_size));
  }
  if (!status.ok()) return lockstep::parallel::ReportFatal(status);
  return 0;
}
