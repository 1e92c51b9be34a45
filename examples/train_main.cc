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

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <memory>
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
#include "parallel/agree.h"
#include "parallel/context.h"
#include "train/checkpoint_callback.h"
#include "train/dataset_source.h"
#include "train/model.h"
#include "train/models.h"
#include "train/progress_bar.h"
#include "train/summary/summary_callback.h"

namespace lockstep::train {
namespace {

struct Flags {
  std::string data;
  std::string model = "resnet8";
  int64_t epochs = 6;
  int64_t batch_size = 32;  // global: over all ranks
  double lr = 0.1;
  double momentum = 0.9;
  double weight_decay = 1e-4;
  std::string lr_schedule = "cosine";
  double warmup_epochs = 1.0;
  int64_t lr_step_epochs = 0;  // step schedule: 0 decays at 1/3 and 2/3 of the run
  int64_t image_size = 0;      // 0: the size the model was made for
  double val_fraction = 0.0;
  int workers = 0;  // 0: as many as --threads
  int threads = 0;  // 0: host cores / local ranks, at most the cores bound to
  uint64_t seed = 0;
  std::string ckpt_dir;
  int64_t save_steps = 0;
  int64_t save_epochs = 1;
  int keep_max = 5;
  std::string resume;
  std::string on_save_error = "stop";
  std::string loss_scale = "1";  // a number, or "dynamic"
  DynamicLossScale dynamic_scale;
  int64_t log_every = 20;
  std::string progress = "auto";
  bool sync_bn = false;
  int64_t grad_accum = 1;
  double fusion_mb = 25.0;
  std::string device = "auto";
  std::string summary_dir;
};

void AddFlags(CLI::App& app, Flags& f) {
  app.add_option("--data", f.data, "ImageFolder root with train/ and val/")->required();
  app.add_option("--model", f.model, "lenet, resnet8, resnet20, resnet18 or resnet50")
      ->capture_default_str();
  app.add_option("--epochs", f.epochs, "epochs in all (a resumed run trains the rest)")
      ->capture_default_str();
  app.add_option("--batch-size", f.batch_size, "global batch; each rank gets batch / ranks")
      ->capture_default_str();
  app.add_option("--lr", f.lr, "peak learning rate")->capture_default_str();
  app.add_option("--momentum", f.momentum)->capture_default_str();
  app.add_option("--weight-decay", f.weight_decay)->capture_default_str();
  app.add_option("--lr-schedule", f.lr_schedule, "cosine, step or constant")
      ->check(CLI::IsMember({"cosine", "step", "constant"}))
      ->capture_default_str();
  app.add_option("--warmup-epochs", f.warmup_epochs, "linear warm-up before the schedule")
      ->capture_default_str();
  app.add_option("--lr-step-epochs", f.lr_step_epochs, "step schedule: epochs per 10x decay");
  app.add_option(
      "--image-size", f.image_size,
      "side of the square network input (default: 224 for resnet18/50, 32 for the others)");
  app.add_option("--val-fraction", f.val_fraction,
                 "without DIR/val: share of each class of DIR/train held out for validation")
      ->check(CLI::Range(0.0, 0.99));
  app.add_option("--workers", f.workers, "decoding threads per rank (default: --threads)");
  app.add_option("--threads", f.threads,
                 "compute threads per rank (default: host cores / local ranks, at most the cores "
                 "it is bound to)");
  app.add_option("--seed", f.seed, "weights, data order and augmentation")->capture_default_str();
  app.add_option("--ckpt-dir", f.ckpt_dir, "write checkpoints here");
  app.add_option("--save-steps", f.save_steps, "checkpoint every N steps (0: off)")
      ->capture_default_str();
  app.add_option("--save-epochs", f.save_epochs, "checkpoint every N epochs (0: off)")
      ->capture_default_str();
  app.add_option("--keep-max", f.keep_max, "checkpoints kept per rank (0: all)")
      ->capture_default_str();
  app.add_option("--resume", f.resume, "continue from the newest complete step in this directory");
  app.add_option("--on-save-error", f.on_save_error,
                 "a checkpoint that cannot be written (no space, permission): stop, or warn and "
                 "continue")
      ->check(CLI::IsMember({"stop", "continue"}))
      ->capture_default_str();
  app.add_option("--loss-scale", f.loss_scale,
                 "a fixed loss scale, or dynamic: skip the update and divide the scale when the "
                 "gradients overflow, grow it after a window of finite steps")
      ->capture_default_str();
  app.add_option("--loss-scale-init", f.dynamic_scale.initial, "dynamic: initial scale")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--loss-scale-factor", f.dynamic_scale.factor,
                 "dynamic: divisor on overflow and multiplier after a window")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--loss-scale-window", f.dynamic_scale.window,
                 "dynamic: finite steps in a row before the scale grows")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--log-every", f.log_every, "loss line every N steps (0: off)")
      ->capture_default_str();
  app.add_option("--progress", f.progress,
                 "auto (a bar on a terminal, loss lines otherwise), bar or lines")
      ->check(CLI::IsMember({"auto", "bar", "lines"}))
      ->capture_default_str();
  app.add_flag("--sync-bn", f.sync_bn, "batch statistics over all ranks");
  app.add_option("--device", f.device,
                 "auto (CUDA when every rank has a GPU of its own), cpu or cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--summary-dir", f.summary_dir,
                 "rank 0 writes metrics.jsonl, TensorBoard events and curves.png here");
  app.add_option("--grad-accum", f.grad_accum, "micro-batches per update")->capture_default_str();
  app.add_option("--fusion-mb", f.fusion_mb, "gradient AllReduce bucket size (MB)")
      ->capture_default_str();
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

absl::StatusOr<Data> OpenData(const Flags& f, const parallel::Context& ctx, int64_t per_rank) {
  dataset::ImageFolderOptions options{.num_shards = ctx.size(),
                                      .shard_id = ctx.rank(),
                                      .seed = f.seed,
                                      .hold_out = {.fraction = f.val_fraction, .seed = f.seed}};
  LS_ASSIGN_OR_RETURN(dataset::Dataset train, dataset::ImageFolder(f.data + "/train", options));
  LS_ASSIGN_OR_RETURN(std::optional<dataset::Dataset> val, OpenValidation(f, options, train));
  Data data;
  data.classes = static_cast<int64_t>(train.class_names().size());
  data.train =
      std::make_unique<DatasetSource>(train.Map(ClassificationTransforms(f.image_size, true))
                                          .Batch(per_rank, /*drop_remainder=*/true)
                                          .Workers(f.workers));
  if (val.has_value()) {
    data.val = std::make_unique<DatasetSource>(
        val->Map(ClassificationTransforms(f.image_size, false)).Batch(per_rank).Workers(f.workers));
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

// parallel::Init gave every rank a GPU of its own, or none of them one.
absl::StatusOr<Device> ChooseDevice(const Flags& f, const parallel::Context& ctx) {
  if (f.device == "cpu") return Device::CPU();
  if (f.device == "cuda" && ctx.device().type != DeviceType::kCUDA) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--device cuda, but rank ", ctx.rank(), " has no GPU of its own (", ctx.local_size(),
        " rank(s) on its host; a CPU-only build, no GPU, or fewer GPUs than ranks)"));
  }
  return ctx.device();
}

absl::StatusOr<ModelOptions> MakeModelOptions(const Flags& f, const parallel::Context& ctx,
                                              const EnvOptions& env) {
  if (f.batch_size < ctx.size() || f.batch_size % ctx.size() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--batch-size ", f.batch_size, " does not divide among ", ctx.size(), " ranks"));
  }
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
  } else if (!absl::SimpleAtod(f.loss_scale, &options.loss_scale) || !(options.loss_scale > 0.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--loss-scale must be a positive number or 'dynamic', got '", f.loss_scale, "'"));
  }
  LS_ASSIGN_OR_RETURN(options.device, ChooseDevice(f, ctx));
  if (ctx.size() > 1) {
    options.parallel = {.mode = parallel::ParallelMode::kDataParallel,
                        .fusion_threshold_mb = f.fusion_mb,
                        .sync_batch_norm = f.sync_bn,
                        .overlap_communication = env.overlap_communication};
  }
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
                               .directory = f.ckpt_dir},
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
std::string ValidationLine(const Flags& f) {
  if (f.val_fraction > 0.0) {
    return absl::StrFormat("%svalidating on %.0f%% of each class of %s/train, held out\n",
                           LogPrefix(), 100.0 * f.val_fraction, f.data);
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
  LS_ASSIGN_OR_RETURN(job.data, OpenData(f, ctx, job.options.batch_size));
  LS_ASSIGN_OR_RETURN(job.net, models::ModelByName(f.model, job.data.classes));
  if (ctx.rank() == 0 && !f.summary_dir.empty()) {
    // A record every --log-every steps, as the loss lines (every step when those are off).
    LS_ASSIGN_OR_RETURN(job.summary,
                        SummaryCallback::Create({.directory = f.summary_dir,
                                                 .every_steps = std::max<int64_t>(1, f.log_every),
                                                 .world_size = ctx.size()}));
  }
  return job;
}

absl::Status Run(Flags f, const parallel::Context& ctx, const EnvOptions& env) {
  if (f.threads <= 0) f.threads = DefaultThreads(ctx.local_size());
  if (f.workers <= 0) f.workers = f.threads;
  absl::StatusOr<Job> job = PrepareJob(f, ctx, env);
  // A set-up error is printed once for all ranks, not once by each.
  LS_RETURN_IF_ERROR(parallel::AgreeAcrossRanks(job.status(), *ctx.HostWorld()));
  auto& [options, data, net, summary, model_image_size] = *job;
  const int64_t steps_per_epoch =
      data.train->dataset().BatchesPerEpoch() / std::max<int64_t>(1, f.grad_accum);
  Model model(net, SoftmaxCrossEntropy(),
              Momentum{.lr = Schedule(f, steps_per_epoch),
                       .momentum = f.momentum,
                       .weight_decay = f.weight_decay},
              options);
  LS_RETURN_IF_ERROR(model.Compile());
  const std::shared_ptr<parallel::Communicator> world = ctx.HostWorld();
  if (!f.resume.empty()) {
    absl::StatusOr<bool> resumed = ResumeFromCheckpoint(model, f.resume, f.model, world);
    // Another model's checkpoints, or another image size's, every rank finds alike.
    LS_RETURN_IF_ERROR(parallel::AgreeAcrossRanks(resumed.status(), *world));
    if (ctx.rank() == 0) {
      std::cout << LogPrefix()
                << (*resumed ? absl::StrFormat("resumed at step %d, %d epoch(s) done",
                                               model.global_step(), model.epochs_done())
                             : absl::StrCat("nothing to resume in ", f.resume, "; starting fresh"))
                << std::endl;
    }
  }
  if (ctx.rank() == 0) {
    std::cout << LogPrefix()
              << absl::StrFormat(
                     "%s, %d parameters, %d classes, %dx%d images (%s), %d rank(s) x %d images "
                     "on %s, %d thread(s) each, %d steps per epoch\n",
                     f.model, CountParameters(model.parameters()), data.classes, f.image_size,
                     f.image_size, model_image_size ? "the model's size" : "--image-size",
                     ctx.size(), options.batch_size,
                     options.device.type == DeviceType::kCPU ? "cpu" : "cuda", f.threads,
                     steps_per_epoch)
              << ValidationLine(f) << std::flush;
  }
  return model.Train(std::max<int64_t>(0, f.epochs - model.epochs_done()), *data.train,
                     MakeCallbacks(f, data, ctx, steps_per_epoch, summary));
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
  CLI11_PARSE(app, argc, argv);
  absl::Status status = lockstep::train::Run(flags, *ctx, *env);
  if (!status.ok()) return lockstep::parallel::ReportFatal(status);
  return 0;
}
