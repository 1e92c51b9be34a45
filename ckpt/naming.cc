#include "ckpt/naming.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace lockstep::ckpt {
namespace {

constexpr absl::string_view kCheckpointSuffix = ".ckpt";
constexpr absl::string_view kManifestSuffix = ".manifest";

// "{head}-{epoch}_{step}{suffix}": head and the two numbers.
std::optional<ParsedName> SplitStep(absl::string_view name, absl::string_view suffix) {
  if (!absl::ConsumeSuffix(&name, suffix)) return std::nullopt;
  const size_t dash = name.rfind('-');
  if (dash == absl::string_view::npos) return std::nullopt;
  absl::string_view step = name.substr(dash + 1);
  const size_t underscore = step.find('_');
  ParsedName parsed;
  if (underscore == absl::string_view::npos ||
      !absl::SimpleAtoi(step.substr(0, underscore), &parsed.epoch) ||
      !absl::SimpleAtoi(step.substr(underscore + 1), &parsed.step_in_epoch)) {
    return std::nullopt;
  }
  parsed.prefix = std::string(name.substr(0, dash));
  return parsed;
}

}  // namespace

std::string CheckpointFileName(absl::string_view prefix, int rank, int64_t epoch,
                               int64_t step_in_epoch) {
  return absl::StrCat(prefix, "_", rank, "-", epoch, "_", step_in_epoch, kCheckpointSuffix);
}

std::string GraphMetaFileName(absl::string_view prefix, int rank) {
  return absl::StrCat(prefix, "_", rank, "-graph.meta");
}

std::string SupersededGraphMetaFileName(absl::string_view prefix, int rank,
                                        absl::string_view fingerprint) {
  return absl::StrCat(prefix, "_", rank, "-graph.", fingerprint, ".meta");
}

std::string ManifestFileName(absl::string_view prefix, int64_t epoch, int64_t step_in_epoch) {
  return absl::StrCat(prefix, "-", epoch, "_", step_in_epoch, kManifestSuffix);
}

std::optional<ParsedName> ParseCheckpointFileName(absl::string_view name) {
  std::optional<ParsedName> parsed = SplitStep(name, kCheckpointSuffix);
  if (!parsed.has_value()) return std::nullopt;
  const size_t underscore = parsed->prefix.rfind('_');
  if (underscore == std::string::npos ||
      !absl::SimpleAtoi(absl::string_view(parsed->prefix).substr(underscore + 1), &parsed->rank)) {
    return std::nullopt;
  }
  parsed->prefix.resize(underscore);
  return parsed;
}

std::optional<ParsedName> ParseManifestFileName(absl::string_view name) {
  return SplitStep(name, kManifestSuffix);
}

}  // namespace lockstep::ckpt
