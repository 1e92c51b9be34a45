#pragma once

// lockstep-train's flags and the checks made of them at start-up, on every rank, before any
// work: each numeric flag against its range (CLI11 validators, examples/flag_checks.h), then
// the combinations (CheckFlags), the steps an epoch can take and the memory the run needs once
// the data and the model are known. Every refusal names the flag, the value and what is
// accepted. SettingsThatMustMatch lists what the ranks must share (parallel::AgreeOnSettings).

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "examples/env_options.h"
#include "parallel/agree.h"
#include "train/layers.h"
#include "train/passes/apply_optimizer.h"

namespace lockstep::train {

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

void AddFlags(CLI::App& app, Flags& f);

// The combinations of flags, checked after the parse: the batch among `ranks`, the loss scale,
// the warm-up within the run, the flags of one schedule or one loss scaling given without it.
absl::Status CheckFlags(const CLI::App& app, const Flags& f, int ranks);

// The fixed loss scale of --loss-scale (after CheckFlags); 0 under --loss-scale dynamic.
double FixedLossScale(const Flags& f);

// At least one optimizer step per epoch: `batches` of `per_rank` images a rank per epoch (its
// `samples`), --grad-accum of them an update.
absl::Status CheckStepsPerEpoch(const Flags& f, int64_t samples, int64_t batches, int64_t per_rank);

// The memory plan of `net`'s training graph for `per_rank` images of f.image_size, on each of
// the `local_ranks` ranks of this host, fits in the host's available memory (CPU training).
absl::Status CheckMemory(const Flags& f, const Layer& net, int64_t per_rank, int local_ranks);

// One line when --threads or --workers ask for more threads than this rank's share of the
// host's cores (they would oversubscribe them); empty otherwise.
std::string OversubscriptionWarning(const Flags& f, int local_ranks);

// What every rank must have alike, as "--flag" and canonical value: the schedule, seed, batch,
// loss scale, checkpointing and whether --help was asked for; per-rank flags (paths, threads,
// logging) are not among them.
std::vector<parallel::Setting> SettingsThatMustMatch(const Flags& f, const EnvOptions& env,
                                                     bool help);

}  // namespace lockstep::train
