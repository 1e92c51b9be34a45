#pragma once

// Which launcher started the process, and how its ranks find each other, from the variables the
// launcher set (the list and the precedence are in examples/env_options.h, whose ParseEnvOptions
// calls ReadLaunchEnv). Apart from env_options.cc for Slurm's syntax and for its tests.

#include <cstddef>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/status.h"
#include "parallel/context.h"

namespace lockstep {

// A variable's value, or null when it is unset (tests pass a map).
using EnvLookup = std::function<const char*(const char* name)>;

struct LaunchEnv {
  bool mpi = false;                                // InitOptions::mpi
  std::optional<parallel::Rendezvous> rendezvous;  // InitOptions::rendezvous
  std::string launcher;                            // InitOptions::launcher; empty: a world of one
  int max_restarts = 0;                            // TORCHELASTIC_MAX_RESTARTS; 0 when unset
};

// An error names the variables: a malformed or out-of-range value, an incomplete set, or two
// launchers' ranks that disagree.
absl::StatusOr<LaunchEnv> ReadLaunchEnv(const EnvLookup& lookup);

// The first `max_hosts` hosts of a Slurm hostlist, the whole list checked: "node[01-03,07],gpu5"
// is node01 node02 node03 node07 gpu5; a number is as wide as its range's first
// ("[8-10]": 8 9 10; "[08-10]": 08 09 10); several brackets in one name vary the last fastest.
absl::StatusOr<std::vector<std::string>> ExpandHostlist(
    absl::string_view hostlist, size_t max_hosts = std::numeric_limits<size_t>::max());

// Slurm's tasks per node, run-length coded: "2(x3),1" is {{2, 3}, {1, 1}}, three nodes of two
// tasks and one of one.
struct TaskRun {
  int tasks = 0;
  int nodes = 0;
};
absl::StatusOr<std::vector<TaskRun>> ParseTasksPerNode(absl::string_view text);

}  // namespace lockstep
