// Starting one rank: fork and exec with its own environment, its output on pipes, in a process
// group of its own (so that a signal reaches what the rank started too), killed by the kernel if
// lockstep-run dies (PR_SET_PDEATHSIG), and an exec failure reported back instead of printed by
// each rank.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "core/status.h"

namespace lockstep::run {

struct Child {
  pid_t pid = -1;   // also its process group
  int out_fd = -1;  // the read ends of its stdout and stderr, non-blocking
  int err_fd = -1;
};

// Starts `argv` (argv[0] looked up in PATH as execvp does) with `env` ("NAME=VALUE" each) and
// stdin from /dev/null. Errors: NotFound when argv[0] does not exist, PermissionDenied when it
// cannot be executed, Internal when the process cannot be made; the message names argv[0].
absl::StatusOr<Child> SpawnChild(const std::vector<std::string>& argv,
                                 const std::vector<std::string>& env);

// The status lockstep-run exits with when SpawnChild failed with `status`, as shells do: 127
// for a program not found, 126 for one that cannot be executed, 1 otherwise.
int SpawnExitCode(const absl::Status& status);

}  // namespace lockstep::run
