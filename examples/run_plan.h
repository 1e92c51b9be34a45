// What lockstep-run was asked to do: its flags, checked into a RunPlan, and the environment of
// torchrun's env:// contract that each rank it starts gets from the plan.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace lockstep::run {

struct RunFlags {
  int nproc_per_node = 0;
  int nnodes = 1;
  int node_rank = 0;
  std::string master;  // HOST:PORT, empty: 127.0.0.1 and a free port
  int max_restarts = 0;
  std::string run_id;  // empty: the default of MakeRunPlan
};

struct Endpoint {
  std::string host;  // an IPv6 address without its brackets
  int port = 0;
};

struct RunPlan {
  int nproc_per_node = 1;
  int nnodes = 1;
  int node_rank = 0;
  int max_restarts = 0;
  std::optional<Endpoint> master;  // none: 127.0.0.1 and a free port for every attempt
  std::string run_id;
  std::vector<std::string> command;  // PROGRAM ARGS...
};

// Adds the flags, with their checks, to `app`, whose remaining arguments are then the command.
void AddRunFlags(CLI::App& app, RunFlags& flags);

// "HOST:PORT" or "[IPv6]:PORT", the port in [1, 65535]; the error names what is wrong with it.
absl::StatusOr<Endpoint> ParseEndpoint(absl::string_view text);

// Checks what one flag's check cannot see (--node-rank against --nnodes, --master required with
// several hosts, the command after the flags) and fills in the defaults. `remaining` is CLI11's
// remaining(): a leading "--" is dropped, an unknown flag before the program is refused.
absl::StatusOr<RunPlan> MakeRunPlan(const RunFlags& flags, std::vector<std::string> remaining);

// The env:// contract for local rank `local_rank` of attempt `restart_count` (0 first): NAME,
// VALUE pairs, to be set over the inherited environment.
std::vector<std::pair<std::string, std::string>> ContractVariables(const RunPlan& plan,
                                                                   const Endpoint& master,
                                                                   int local_rank,
                                                                   int restart_count);

// Variables a rank must not inherit from lockstep-run's own environment: the agent store of a
// torchrun agent above it does not serve these ranks.
inline constexpr const char* kUnsetVariables[] = {
    "TORCHELASTIC_USE_AGENT_STORE",
    // An MPI launcher's rank variables, inherited when lockstep-run itself runs under mpirun or
    // srun --mpi: the ranks would take them for MPI's, which launch_env.h puts first.
    "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"};

}  // namespace lockstep::run
