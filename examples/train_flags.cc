#include "examples/train_flags.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/threads.h"
#include "examples/flag_checks.h"

namespace lockstep::train {
namespace {

constexpr int64_t kMaxEpochs = 1'000'000;
constexpr int64_t kMaxImageSize = 65536;
constexpr int64_t kMaxThreads = 1024;
constexpr double kMaxFloat = std::numeric_limits<float>::max();
// Loss scales are float32 in the graph: a larger one is infinite and every update is skipped.
constexpr char kFloatScale[] = "a finite float32: at most 3.40282e+38";

void AddScheduleFlags(CLI::App& app, Flags& f) {
  app.add_option("--epochs", f.epochs, "epochs in all (a resumed run trains the rest)")
      ->check(IntegerIn(1, kMaxEpochs))
      ->capture_default_str();
  app.add_option("--batch-size", f.batch_size, "global batch; each rank gets batch / ranks")
      ->check(IntegerIn(1))
      ->capture_default_str();
  app.add_option("--lr", f.lr, "peak learning rate")
      ->check(NumberIn(0.0, kNoLimit, Bound::kOpen))
      ->capture_default_str();
  app.add_option("--momentum", f.momentum)
      ->check(NumberIn(0.0, 1.0, Bound::kClosed, Bound::kOpen))
      ->capture_default_str();
  app.add_option("--weight-decay", f.weight_decay)
      ->check(NumberIn(0.0, kNoLimit))
      ->capture_default_str();
  app.add_option("--lr-schedule", f.lr_schedule, "cosine, step or constant")
      ->check(CLI::IsMember({"cosine", "step", "constant"}))
      ->capture_default_str();
  app.add_option("--warmup-epochs", f.warmup_epochs, "linear warm-up before the schedule")
      ->check(NumberIn(0.0, kNoLimit))
      ->capture_default_str();
  app.add_option("--lr-step-epochs", f.lr_step_epochs, "step schedule: epochs per 10x decay")
      ->check(IntegerIn(0, kMaxEpochs));
  app.add_option("--grad-accum", f.grad_accum, "micro-batches per update")
      ->check(IntegerIn(1))
      ->capture_default_str();
  app.add_option("--seed", f.seed, "weights, data order and augmentation")
      ->check(UnsignedInteger())
      ->capture_default_str();
}

void AddLossScaleFlags(CLI::App& app, Flags& f) {
  app.add_option("--loss-scale", f.loss_scale,
                 "a fixed loss scale, or dynamic: skip the update and divide the scale when the "
                 "gradients overflow, grow it after a window of finite steps")
      ->capture_default_str();
  app.add_option("--loss-scale-init", f.dynamic_scale.initial, "dynamic: initial scale")
      ->check(NumberIn(0.0, kMaxFloat, Bound::kOpen))
      ->capture_default_str();
  app.add_option("--loss-scale-factor", f.dynamic_scale.factor,
                 "dynamic: divisor on overflow and multiplier after a window")
      ->check(NumberIn(1.0, kMaxFloat, Bound::kOpen))
      ->capture_default_str();
  app.add_option("--loss-scale-window", f.dynamic_scale.window,
                 "dynamic: finite steps in a row before the scale grows")
      ->check(IntegerIn(1))
      ->capture_default_str();
}

void AddDataFlags(CLI::App& app, Flags& f) {
  app.add_option("--data", f.data, "ImageFolder root with train/ and val/")
      ->required()
      ->check(NonEmptyPath());
  app.add_option("--model", f.model, "lenet, resnet8, resnet20, resnet18 or resnet50")
      ->capture_default_str();
  app.add_option(
         "--image-size", f.image_size,
         "side of the square network input (default: 224 for resnet18/50, 32 for the others)")
      ->check(IntegerIn(0, kMaxImageSize));
  app.add_option("--val-fraction", f.val_fraction,
                 "without DIR/val: share of each class of DIR/train held out for validation")
      ->check(NumberIn(0.0, 0.99));
  app.add_option("--workers", f.workers, "decoding threads per rank (default: --threads)")
      ->check(IntegerIn(0, kMaxThreads));
  app.add_option("--threads", f.threads,
                 "compute threads per rank (default: host cores / local ranks, at most the cores "
                 "it is bound to)")
      ->check(IntegerIn(0, kMaxThreads));
  app.add_option("--device", f.device,
                 "auto (CUDA when every rank has a GPU of its own), cpu or cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--cuda-graph", f.cuda_graph,
                 "on: a GPU launches each training step as one CUDA graph after two warm-up "
                 "steps (kernel by kernel where it cannot, with one line); off: kernel by kernel")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  app.add_flag("--sync-bn", f.sync_bn, "batch statistics over all ranks");
  app.add_option("--fusion-mb", f.fusion_mb,
                 "gradient AllReduce bucket size (MB; 0: one AllReduce per gradient)")
      ->check(NumberIn(0.0, kNoLimit))
      ->capture_default_str();
}

void AddOutputFlags(CLI::App& app, Flags& f) {
  app.add_option("--ckpt-dir", f.ckpt_dir, "write checkpoints here")->check(NonEmptyPath());
  app.add_option("--save-steps", f.save_steps, "checkpoint every N steps (0: off)")
      ->check(IntegerIn(0))
      ->capture_default_str();
  app.add_option("--save-epochs", f.save_epochs, "checkpoint every N epochs (0: off)")
      ->check(IntegerIn(0))
      ->capture_default_str();
  app.add_option("--keep-max", f.keep_max, "checkpoints kept per rank (0: all)")
      ->check(IntegerIn(0, std::numeric_limits<int>::max()))
      ->capture_default_str();
  app.add_option("--resume", f.resume, "continue from the newest complete step in this directory")
      ->check(NonEmptyPath());
  app.add_option("--on-save-error", f.on_save_error,
                 "a checkpoint that cannot be written (no space, permission): stop, or warn and "
                 "continue")
      ->check(CLI::IsMember({"stop", "continue"}))
      ->capture_default_str();
  app.add_option("--log-every", f.log_every, "loss line every N steps (0: off)")
      ->check(IntegerIn(0))
      ->capture_default_str();
  app.add_option("--progress", f.progress,
                 "auto (a bar on a terminal, loss lines otherwise), bar or lines")
      ->check(CLI::IsMember({"auto", "bar", "lines"}))
      ->capture_default_str();
  app.add_option("--summary-dir", f.summary_dir,
                 "rank 0 writes metrics.jsonl, TensorBoard events and curves.png here")
      ->check(NonEmptyPath());
}

absl::Status CheckLossScale(const CLI::App& app, const Flags& f) {
  if (f.loss_scale != "dynamic") {
    double scale = 0.0;
    const bool number = absl::SimpleAtod(f.loss_scale, &scale);
    if (!number || !(scale > 0.0) || !(scale <= kMaxFloat)) {
      // Only a positive number too large for float32 is told so; zero and negatives are not
      // positive, whatever float32 holds.
      const bool too_large = number && scale > kMaxFloat;
      return absl::InvalidArgumentError(
          absl::StrCat("--loss-scale must be a positive number or 'dynamic', got '", f.loss_scale,
                       "'", too_large ? absl::StrCat(", which is not ", kFloatScale) : ""));
    }
  }
  for (const char* flag : {"--loss-scale-init", "--loss-scale-factor", "--loss-scale-window"}) {
    if (app.count(flag) > 0 && f.loss_scale != "dynamic") {
      return absl::InvalidArgumentError(absl::StrCat(
          flag, " applies to --loss-scale dynamic, not to --loss-scale ", f.loss_scale));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string Shortest(double value) {
  char buffer[32];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, end);
}

void AddFlags(CLI::App& app, Flags& f) {
  AddDataFlags(app, f);
  AddScheduleFlags(app, f);
  AddLossScaleFlags(app, f);
  AddPrecisionFlags(app, f.precision);
  AddOutputFlags(app, f);
}

absl::Status CheckFlags(const CLI::App& app, const Flags& f, int ranks) {
  if (f.batch_size < ranks || f.batch_size % ranks != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--batch-size ", f.batch_size, " does not divide among ", ranks, " ranks"));
  }
  LS_RETURN_IF_ERROR(CheckLossScale(app, f));
  if (f.warmup_epochs > static_cast<double>(f.epochs)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--warmup-epochs ", Shortest(f.warmup_epochs), " is longer than the run (",
                     "--epochs ", f.epochs, "): the learning rate would never reach --lr"));
  }
  if (f.lr_step_epochs > 0 && f.lr_schedule != "step") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--lr-step-epochs applies to --lr-schedule step, not to --lr-schedule ", f.lr_schedule));
  }
  return absl::OkStatus();
}

double FixedLossScale(const Flags& f) {
  double scale = 0.0;
  return f.loss_scale != "dynamic" && absl::SimpleAtod(f.loss_scale, &scale) ? scale : 0.0;
}

std::string OversubscriptionWarning(const Flags& f, int local_ranks) {
  const int share = DefaultThreads(local_ranks);
  std::vector<std::string> lines;
  for (const auto& [flag, threads] :
       {std::pair{"--threads", f.threads}, {"--workers", f.workers}}) {
    if (threads <= share) continue;
    lines.push_back(absl::StrFormat(
        "%s %d is more than the %d core(s) each of the %d rank(s) on this host may use: the "
        "threads will take turns on the cores and run slower",
        flag, threads, share, local_ranks));
  }
  return absl::StrJoin(lines, "; ");
}

std::vector<parallel::Setting> SettingsThatMustMatch(const Flags& f, const EnvOptions& env,
                                                     bool help) {
  // The paths may differ (a disk per host); whether they are given may not.
  const auto given = [](const std::string& path) { return path.empty() ? "no" : "yes"; };
  return {{"--help", help ? "yes" : "no"},
          {"--model", f.model},
          {"--epochs", absl::StrCat(f.epochs)},
          {"--batch-size", absl::StrCat(f.batch_size)},
          {"--grad-accum", absl::StrCat(f.grad_accum)},
          {"--image-size", absl::StrCat(f.image_size)},
          {"--val-fraction", Shortest(f.val_fraction)},
          {"--seed", absl::StrCat(f.seed)},
          {"--lr", Shortest(f.lr)},
          {"--momentum", Shortest(f.momentum)},
          {"--weight-decay", Shortest(f.weight_decay)},
          {"--lr-schedule", f.lr_schedule},
          {"--warmup-epochs", Shortest(f.warmup_epochs)},
          {"--lr-step-epochs", absl::StrCat(f.lr_step_epochs)},
          {"--loss-scale", f.loss_scale},
          {"--loss-scale-init", Shortest(f.dynamic_scale.initial)},
          {"--loss-scale-factor", Shortest(f.dynamic_scale.factor)},
          {"--loss-scale-window", absl::StrCat(f.dynamic_scale.window)},
          {"--sync-bn", f.sync_bn ? "yes" : "no"},
          {"--fusion-mb", Shortest(f.fusion_mb)},
          {"--amp-level", f.precision.amp_level},
          {"--amp-dtype", f.precision.amp_dtype},
          {"--allreduce-dtype", f.precision.allreduce_dtype},
          {"--device", f.device},
          {"--cuda-graph", f.cuda_graph},  // whether the first steps' agreement runs
          {"--ckpt-dir given", given(f.ckpt_dir)},
          {"--save-steps", absl::StrCat(f.save_steps)},
          {"--save-epochs", absl::StrCat(f.save_epochs)},
          {"--keep-max", absl::StrCat(f.keep_max)},
          {"--on-save-error", f.on_save_error},
          {"--resume given", given(f.resume)},
          {"LOCKSTEP_CUDA_TF32", env.math.allow_tf32 ? "1" : "0"},
          {"LOCKSTEP_DETERMINISTIC", env.math.deterministic ? "1" : "0"}};
}

std::span<const PerRankFlag> PerRankFlags() {
  static constexpr PerRankFlag kFlags[] = {
      {"--data", "a host may keep its copy elsewhere; what the copies hold is agreed at start-up"},
      {"--threads", "the host's cores: the kernels compute the same numbers on any count"},
      {"--workers", "decoding threads: the batches' order and content do not depend on them"},
      {"--log-every", "rank 0's loss lines and summary records only; no collective"},
      {"--progress", "rank 0's display only; no collective"},
      {"--summary-dir", "rank 0 alone writes there; no collective"},
  };
  return kFlags;
}

std::vector<std::string> IneffectiveFlags(const Flags& f, const parallel::Context& ctx,
                                          const Model& model) {
  std::vector<std::string> lines;
  const PrecisionFlags& p = f.precision;
  if (!f.ckpt_dir.empty() && f.save_steps == 0 && f.save_epochs == 0) {
    lines.push_back(absl::StrCat("--ckpt-dir ", f.ckpt_dir,
                                 " with --save-steps 0 and --save-epochs 0: no checkpoint is "
                                 "written"));
  }
  if (p.amp_level == "O0" && p.amp_dtype != "bf16") {
    lines.push_back(absl::StrCat("--amp-dtype ", p.amp_dtype,
                                 " with --amp-level O0: float32 "
                                 "throughout, the dtype is unused"));
  }
  if (p.amp_level != "O0" && p.amp_dtype == "fp16" && f.loss_scale != "dynamic") {
    lines.push_back(absl::StrCat("--amp-dtype fp16 with the fixed --loss-scale ", f.loss_scale,
                                 ": fp16 gradients may overflow or vanish; --loss-scale dynamic "
                                 "adjusts the scale"));
  }
  if (p.allreduce_dtype != "f32" && ctx.size() == 1) {
    lines.push_back(absl::StrCat("--allreduce-dtype ", p.allreduce_dtype,
                                 " with one rank: no gradient AllReduce runs"));
  }
  const bool batch_norm =
      std::any_of(model.parameters().begin(), model.parameters().end(),
                  [](const ParameterSpec& spec) { return spec.role == InputRole::kState; });
  if (f.sync_bn && !batch_norm) {
    lines.push_back(absl::StrCat("--sync-bn with ", f.model, ", which has no batch norm"));
  } else if (f.sync_bn && ctx.size() == 1) {
    lines.push_back("--sync-bn with one rank: its batch is the global batch already");
  }
  return lines;
}

std::map<std::string, std::string> ResumeRecipe(const Flags& f) {
  return {{"--batch-size", absl::StrCat(f.batch_size)},
          {"--grad-accum", absl::StrCat(f.grad_accum)},
          {"--seed", absl::StrCat(f.seed)},
          {"--loss-scale", f.loss_scale == "dynamic" ? "dynamic" : "fixed"}};
}

}  // namespace lockstep::train
