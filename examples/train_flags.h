#pragma once

// lockstep-train's command line: the flags and their defaults, their ranges and combinations
// (checked on every rank after the parse), the settings every rank must share, and the notes
// on flags that change nothing in the configuration given.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "examples/env_options.h"
#include "examples/precision_flags.h"
#include "parallel/agree.h"
#include "parallel/context.h"
#include "train/model.h"

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
  std::string cuda_graph = "on";
  std::string summary_dir;
  PrecisionFlags precision;
};

// Adds every flag to `app`, each with its range check.
void AddFlags(CLI::App& app, Flags& f);

// The combinations of flags, checked after the parse: the batch among `ranks`, the loss scale,
// the warm-up within the run, the flags of one schedule or one loss scaling given without it.
absl::Status CheckFlags(const CLI::App& app, const Flags& f, int ranks);

// The fixed loss scale of --loss-scale (after CheckFlags); 0 under --loss-scale dynamic.
double FixedLossScale(const Flags& f);

// The shortest text that reads back as `value`.
std::string Shortest(double value);

// One line when --threads or --workers ask for more threads than this rank's share of the
// host's cores (they would oversubscribe them); empty otherwise.
std::string OversubscriptionWarning(const Flags& f, int local_ranks);

// What every rank must have alike, as "--flag" (or "--flag given") and canonical value: every
// flag that changes the collectives a rank issues, the graph, the data order or the numerics,
// and whether --help was asked for. Such a flag is refused on the CPU too, where it may change
// nothing, so that a job's flags mean the same wherever it runs.
std::vector<parallel::Setting> SettingsThatMustMatch(const Flags& f, const EnvOptions& env,
                                                     bool help);

// A flag each rank may set as it likes, and why that changes none of the above.
struct PerRankFlag {
  std::string_view flag;  // "--threads"
  std::string_view why;
};
// Every flag of AddFlags is here or in SettingsThatMustMatch, never both: a flag added to neither
// fails TrainFlagsTest.EveryFlagIsSharedOrPerRank.
std::span<const PerRankFlag> PerRankFlags();

// The settings a resume must keep (ckpt::CheckRecipe): --batch-size and --grad-accum (the data
// position and the schedule count their steps), --seed (the data order the position indexes)
// and whether --loss-scale is dynamic (its state is in the checkpoint). Other flags may change
// between a run's jobs (README's table).
std::map<std::string, std::string> ResumeRecipe(const Flags& f);

// One line for each flag that changes nothing in the configuration given (or risks what the
// user would not want), so that no setting is silently without effect.
std::vector<std::string> IneffectiveFlags(const Flags& f, const parallel::Context& ctx,
                                          const Model& model);

}  // namespace lockstep::train
