// lockstep-run's signals arrive as bytes on a pipe (the self-pipe trick): the handlers only
// write, and the loop that watches the ranks' output acts on them between reads.
#pragma once

#include <csignal>
#include <string>

#include "core/status.h"

namespace lockstep::run {

// The signals lockstep-run passes on to every rank.
inline constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP};

// Catches the forwarded signals and SIGCHLD (a rank ended) and ignores SIGPIPE (a reader of the
// output that went away); returns the pipe's end to poll.
absl::StatusOr<int> InstallSignalPipe();

// The next signal that arrived, or 0 when none is waiting. `fd` is InstallSignalPipe's.
int NextSignal(int fd);

// In a child between fork and exec (async-signal-safe): the default actions back for what
// InstallSignalPipe changed, and `mask`, the mask the parent had before it blocked signals to fork.
void RestoreSignalsInChild(const sigset_t& mask);

// Ends lockstep-run by `signal_number`, so its own parent sees what stopped it.
[[noreturn]] void DieBySignal(int signal_number);

// "SIGTERM".
std::string SignalName(int signal_number);

}  // namespace lockstep::run
