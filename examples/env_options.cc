#include "examples/env_options.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "examples/end_job.h"
#include "examples/launch_env.h"

namespace lockstep {
namespace {

using Lookup = std::function<const char*(const char* name)>;

// The variable's value; nullopt when it is unset or empty.
std::optional<std::string> Value(const Lookup& lookup, const char* name) {
  const char* value = lookup(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

absl::Status Malformed(const char* name, const std::string& value, absl::string_view expected) {
  return absl::InvalidArgumentError(absl::StrCat(name, "='", value, "' is not ", expected));
}

// A finite number, > 0 when `positive`, else >= 0 (SimpleAtod refuses trailing junk).
absl::StatusOr<std::optional<double>> Number(const Lookup& lookup, const char* name, bool positive,
                                             absl::string_view unit) {
  std::optional<std::string> text = Value(lookup, name);
  if (!text.has_value()) return std::nullopt;
  double value = 0.0;
  if (!absl::SimpleAtod(*text, &value)) {
    return Malformed(name, *text, absl::StrCat("a number of ", unit));
  }
  if (!std::isfinite(value) || value < 0.0 || (positive && value == 0.0)) {
    return Malformed(name, *text,
                     absl::StrCat(positive ? "a positive" : "a non-negative", " number of ", unit));
  }
  return value;
}

// "1" or "0".
absl::StatusOr<std::optional<bool>> Switch(const Lookup& lookup, const char* name) {
  std::optional<std::string> text = Value(lookup, name);
  if (!text.has_value()) return std::nullopt;
  if (*text == "1") return true;
  if (*text == "0") return false;
  return Malformed(name, *text, "1 or 0");
}

absl::Status ReadCommOptions(const Lookup& lookup, parallel::CommOptions* options) {
  LS_ASSIGN_OR_RETURN(std::optional<double> seconds, Number(lookup, "LOCKSTEP_COLLECTIVE_TIMEOUT_S",
                                                            /*positive=*/true, "seconds"));
  if (seconds.has_value()) {
    // At most ~24 days, so that waits never overflow the clock.
    options->collective_timeout = std::chrono::milliseconds(static_cast<int64_t>(
        std::min(*seconds * 1000.0, static_cast<double>(std::numeric_limits<int32_t>::max()))));
  }
  LS_ASSIGN_OR_RETURN(std::optional<double> segment_mb,
                      Number(lookup, "LOCKSTEP_ALLREDUCE_SEGMENT_MB", /*positive=*/false, "MiB"));
  if (segment_mb.has_value()) {
    options->allreduce_segment_bytes = static_cast<size_t>(std::min(
        *segment_mb * (1 << 20), static_cast<double>(std::numeric_limits<int64_t>::max())));
  }
  options->ranks_may_share_gpu = Value(lookup, "NCCL_MULTI_RANK_GPU_ENABLE") == "1";
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<EnvOptions> ParseEnvOptions(const Lookup& lookup) {
  EnvOptions options;
  LS_ASSIGN_OR_RETURN(LaunchEnv launch, ReadLaunchEnv(lookup));
  options.init.mpi = launch.mpi;
  options.init.rendezvous = std::move(launch.rendezvous);
  options.init.launcher = std::move(launch.launcher);
  options.max_restarts = launch.max_restarts;
  LS_RETURN_IF_ERROR(ReadCommOptions(lookup, &options.init.comm));
  options.init.comm.on_device_failure = EndJobAfterGrace;
  LS_ASSIGN_OR_RETURN(std::optional<bool> overlap, Switch(lookup, "LOCKSTEP_OVERLAP_COMM"));
  if (overlap.has_value()) options.overlap_communication = *overlap;
  options.dump_dir = Value(lookup, "LOCKSTEP_DUMP_GRAPH").value_or("");
  LS_ASSIGN_OR_RETURN(std::optional<bool> tf32, Switch(lookup, "LOCKSTEP_CUDA_TF32"));
  if (tf32.has_value()) options.math.allow_tf32 = *tf32;
  LS_ASSIGN_OR_RETURN(std::optional<bool> deterministic, Switch(lookup, "LOCKSTEP_DETERMINISTIC"));
  if (deterministic.has_value()) options.math.deterministic = *deterministic;
  return options;
}

absl::StatusOr<EnvOptions> ReadEnvOptions() {
  return ParseEnvOptions([](const char* name) { return std::getenv(name); });
}

absl::StatusOr<StartedRank> StartRank(int* argc, char*** argv) {
  LS_ASSIGN_OR_RETURN(EnvOptions env, ReadEnvOptions());
  LS_ASSIGN_OR_RETURN(parallel::Context context, parallel::Init(argc, argv, env.init));
  return StartedRank{.env = std::move(env), .context = std::move(context)};
}

}  // namespace lockstep
