// One attempt of lockstep-run: this host's ranks started, their output passed on line by line,
// the signals lockstep-run receives passed to them, and, when one rank fails, the others ended
// (SIGTERM, SIGKILL after a grace period) so that the attempt ends as a whole.
#pragma once

#include <string>
#include <vector>

namespace lockstep::run {

struct RankLaunch {
  int rank = 0;                  // the global rank, for "[rank 3] " and the report
  std::vector<std::string> env;  // "NAME=VALUE" each
};

struct GroupOutcome {
  enum class Kind { kSucceeded, kRankFailed, kNotStarted };
  Kind kind = Kind::kSucceeded;
  // kRankFailed: the first rank that exited non-zero or by a signal; kNotStarted: the rank that
  // could not be started (the ranks before it were).
  int rank = -1;
  std::string what;        // "exited with status 1", "was killed by SIGSEGV", "cannot execute ..."
  std::string message;     // kRankFailed: its last line on stderr, if any
  int exit_code = 0;       // what lockstep-run ends with for it
  std::vector<int> ended;  // the ranks lockstep-run ended, failure or signal
  int stop_signal = 0;     // a signal lockstep-run received and passed on: no restart
};

// "rank 1 exited with status 1: <message>; ended ranks 0, 2, 3".
std::string Describe(const GroupOutcome& outcome);

// Starts `command` once per launch, relays the output, and returns when every rank has been
// reaped. `signal_fd` is InstallSignalPipe's.
GroupOutcome RunGroup(const std::vector<std::string>& command,
                      const std::vector<RankLaunch>& launches, int signal_fd);

}  // namespace lockstep::run
