#pragma once

// Command-line checks shared by the binaries: CLI11 validators that refuse what CLI::Range and
// CLI::PositiveNumber let through (NaN, infinities, a '-' before an unsigned number) and say
// what is accepted, and a parse that turns CLI11's exceptions into a Status naming the flag.
//
//   app.add_option("--epochs", epochs)->check(IntegerIn(1, 1'000'000));
//   app.add_option("--lr", lr)->check(NumberIn(0.0, kNoLimit, Bound::kOpen));
//   absl::StatusOr<ParseOutcome> parsed = ParseCommandLine(app, argc, argv);
//
// A refused value reads "--epochs: 0 is not an integer in [1, 1000000]".

#include <CLI/CLI.hpp>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "core/status.h"

namespace lockstep {

inline constexpr double kNoLimit = std::numeric_limits<double>::infinity();
inline constexpr int64_t kNoIntLimit = std::numeric_limits<int64_t>::max();

// Whether a bound of NumberIn is itself accepted.
enum class Bound { kClosed, kOpen };

// An integer in [min, max], written in decimal with nothing after it.
CLI::Validator IntegerIn(int64_t min, int64_t max = kNoIntLimit);
// An unsigned 64-bit integer (no sign).
CLI::Validator UnsignedInteger();
// A path: anything but the empty string, which would silently mean the working directory (or
// nothing) where a flag names a file or folder.
CLI::Validator NonEmptyPath();
// A finite number between min and max, each bound included unless kOpen.
CLI::Validator NumberIn(double min, double max, Bound lower = Bound::kClosed,
                        Bound upper = Bound::kClosed);
// What NumberIn(min, max, lower, upper) accepts, in words ("a finite number in (0, 1]").
std::string DescribeNumberRange(double min, double max, Bound lower, Bound upper);

enum class ParseOutcome { kRun, kHelp };

// Parses the command line into `app`: kHelp when --help was asked for (the caller prints
// app.help()), InvalidArgument with CLI11's message, naming the flag, when it is malformed, and
// naming the subcommands when the first argument is none of them.
absl::StatusOr<ParseOutcome> ParseCommandLine(CLI::App& app, int argc, const char* const* argv);

// Refuses `bytes_per_rank` on each of `ranks_on_host` processes when they are more than this
// host has available (HostMemoryAvailable: free memory, caches it can drop, a container's limit):
// "<what> needs N bytes (G GiB), but the host has M bytes (H GiB) available"; or when one rank's
// share is more than this process may still map (ProcessMemoryHeadroom: ulimit -v, ulimit -d).
// `what` names the flags that sized it.
absl::Status CheckFitsInMemory(double bytes_per_rank, int ranks_on_host, absl::string_view what);

// For the binaries of one process: parses, prints the help or the error ("lockstep: error: ...")
// and returns the exit code to end with (0 after the help, `error_status` after an error), or
// nullopt to run.
std::optional<int> ParseOrExitCode(CLI::App& app, int argc, const char* const* argv,
                                   int error_status = 1);

}  // namespace lockstep
