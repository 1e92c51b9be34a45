#include "examples/flag_checks.h"

#include <algorithm>
#include <cmath>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/host_memory.h"
#include "core/logging.h"

namespace lockstep {
namespace {

std::string DescribeIntegerRange(int64_t min, int64_t max) {
  if (max == kNoIntLimit && min == 0) return "a non-negative integer";
  if (max == kNoIntLimit && min == 1) return "a positive integer";
  if (max == kNoIntLimit) return absl::StrCat("an integer >= ", min);
  return absl::StrCat("an integer in [", min, ", ", max, "]");
}

// A validator whose `accepts` tests the text; a refusal reads "<text> is not <expected>".
CLI::Validator Expecting(std::string expected, std::function<bool(const std::string&)> accepts) {
  return CLI::Validator(
      [expected, accepts = std::move(accepts)](std::string& text) {
        return accepts(text) ? std::string() : absl::StrCat("'", text, "' is not ", expected);
      },
      expected);
}

std::string Bytes(double bytes) {
  return absl::StrFormat("%.0f bytes (%.1f GiB)", bytes, bytes / (1 << 30));
}

}  // namespace

std::string DescribeNumberRange(double min, double max, Bound lower, Bound upper) {
  const bool open_min = lower == Bound::kOpen;
  if (std::isinf(max)) {
    if (min == 0.0) return open_min ? "a positive finite number" : "a non-negative finite number";
    return absl::StrFormat("a finite number %s %g", open_min ? ">" : ">=", min);
  }
  return absl::StrFormat("a number in %s%g, %g%s", open_min ? "(" : "[", min, max,
                         upper == Bound::kOpen ? ")" : "]");
}

CLI::Validator IntegerIn(int64_t min, int64_t max) {
  return Expecting(DescribeIntegerRange(min, max), [min, max](const std::string& text) {
    int64_t value = 0;
    return absl::SimpleAtoi(text, &value) && value >= min && value <= max;
  });
}

CLI::Validator UnsignedInteger() {
  return Expecting("an unsigned 64-bit integer", [](const std::string& text) {
    uint64_t value = 0;
    return text.find('-') == std::string::npos && absl::SimpleAtoi(text, &value);
  });
}

CLI::Validator NonEmptyPath() {
  return Expecting("a path: it is empty", [](const std::string& text) { return !text.empty(); });
}

CLI::Validator NumberIn(double min, double max, Bound lower, Bound upper) {
  return Expecting(DescribeNumberRange(min, max, lower, upper), [=](const std::string& text) {
    double value = 0.0;
    if (!absl::SimpleAtod(text, &value) || !std::isfinite(value)) return false;
    const bool above = lower == Bound::kOpen ? value > min : value >= min;
    const bool below = upper == Bound::kOpen ? value < max : value <= max;
    return above && below;
  });
}

absl::StatusOr<ParseOutcome> ParseCommandLine(CLI::App& app, int argc, const char* const* argv) {
  // CLI11 calls an unknown subcommand a missing one ("A subcommand is required").
  const std::vector<CLI::App*> subcommands = app.get_subcommands([](CLI::App*) { return true; });
  std::vector<std::string> names;
  for (const CLI::App* subcommand : subcommands) names.push_back(subcommand->get_name());
  if (!subcommands.empty() && argc > 1 && argv[1][0] != '-' &&
      std::find(names.begin(), names.end(), argv[1]) == names.end()) {
    return absl::InvalidArgumentError(absl::StrCat("unknown subcommand '", argv[1], "': one of ",
                                                   absl::StrJoin(names, ", "), " (see --help)"));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success&) {  // --help
    return ParseOutcome::kHelp;
  } catch (const CLI::ParseError& error) {
    return absl::InvalidArgumentError(absl::StrCat(error.what(), " (see --help)"));
  }
  return ParseOutcome::kRun;
}

absl::Status CheckFitsInMemory(double bytes_per_rank, int ranks_on_host, absl::string_view what) {
  const double bytes = bytes_per_rank * ranks_on_host;
  const double available = static_cast<double>(HostMemoryAvailable());
  if (bytes > available) {
    return absl::ResourceExhaustedError(absl::StrCat(
        what, " needs ", Bytes(bytes), ", but the host has ", Bytes(available), " available"));
  }
  const double headroom = static_cast<double>(ProcessMemoryHeadroom());
  if (bytes_per_rank > headroom) {
    return absl::ResourceExhaustedError(
        absl::StrCat(what, " needs ", Bytes(bytes_per_rank), " a rank, but this process may map ",
                     Bytes(headroom), " more under its limits (ulimit -v, ulimit -d)"));
  }
  return absl::OkStatus();
}

std::optional<int> ParseOrExitCode(CLI::App& app, int argc, const char* const* argv,
                                   int error_status) {
  absl::StatusOr<ParseOutcome> parsed = ParseCommandLine(app, argc, argv);
  if (!parsed.ok()) {
    std::cerr << LogPrefix() << "error: " << parsed.status().message() << std::endl;
    return error_status;
  }
  if (*parsed == ParseOutcome::kHelp) {
    std::cout << app.help();
    return 0;
  }
  return std::nullopt;
}

}  // namespace lockstep
