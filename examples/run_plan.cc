#include "examples/run_plan.h"

#include <unistd.h>

#include <ctime>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "examples/flag_checks.h"

namespace lockstep::run {
namespace {

constexpr int kMaxRanksPerNode = 4096;
constexpr int kMaxNodes = 65536;  // with kMaxRanksPerNode, WORLD_SIZE still fits an int
constexpr int kMaxPort = 65535;

CLI::Validator EndpointCheck() {
  return CLI::Validator(
      [](std::string& text) {
        absl::StatusOr<Endpoint> endpoint = ParseEndpoint(text);
        return endpoint.ok() ? std::string() : std::string(endpoint.status().message());
      },
      "");
}

CLI::Validator NonEmpty() {
  return CLI::Validator(
      [](std::string& text) { return text.empty() ? std::string("it is empty") : std::string(); },
      "");
}

// Unique per launch on one host; with several hosts every lockstep-run must name the same job,
// and the one address they all share does.
std::string DefaultRunId(const RunFlags& flags) {
  if (flags.nnodes > 1) return absl::StrCat("lockstep-", flags.master);
  return absl::StrCat("lockstep-", getpid(), "-", std::time(nullptr));
}

}  // namespace

void AddRunFlags(CLI::App& app, RunFlags& flags) {
  app.add_option("-n,--nproc-per-node", flags.nproc_per_node, "ranks to start on this host")
      ->required()
      ->check(IntegerIn(1, kMaxRanksPerNode));
  app.add_option("--nnodes", flags.nnodes, "hosts in the job, each running a lockstep-run")
      ->check(IntegerIn(1, kMaxNodes))
      ->capture_default_str();
  app.add_option("--node-rank", flags.node_rank, "this host's place among them (GROUP_RANK)")
      ->check(IntegerIn(0, kMaxNodes - 1))
      ->capture_default_str();
  app.add_option("--master", flags.master,
                 "where rank 0 (on node 0) serves the rendezvous; default with one host: "
                 "127.0.0.1 and a free port")
      ->type_name("HOST:PORT")
      ->check(EndpointCheck());
  app.add_option("--max-restarts", flags.max_restarts,
                 "times to start this host's ranks again after one fails")
      ->check(IntegerIn(0, 1'000'000))
      ->capture_default_str();
  app.add_option("--run-id", flags.run_id,
                 "TORCHELASTIC_RUN_ID; default: unique per launch, or with several hosts "
                 "\"lockstep-HOST:PORT\" of --master")
      ->type_name("ID")
      ->check(NonEmpty());
  // PROGRAM and its arguments are CLI11's remaining arguments, its flags left alone.
  app.prefix_command();
}

absl::StatusOr<Endpoint> ParseEndpoint(absl::string_view text) {
  const size_t colon = text.rfind(':');
  absl::string_view host = text.substr(0, colon);
  // An IPv6 address without brackets ("::1") has colons but no port.
  if (colon == absl::string_view::npos || (host.find(':') != host.npos && host.front() != '[')) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "' has no port: HOST:PORT"));
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) return absl::InvalidArgumentError(absl::StrCat("'", text, "' has no host"));
  int port = 0;
  const absl::string_view port_text = text.substr(colon + 1);
  if (!absl::SimpleAtoi(port_text, &port) || port < 1 || port > kMaxPort) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "': the port '", port_text,
                                                   "' is not an integer in [1, ", kMaxPort, "]"));
  }
  return Endpoint{std::string(host), port};
}

absl::StatusOr<RunPlan> MakeRunPlan(const RunFlags& flags, std::vector<std::string> remaining) {
  if (!remaining.empty() && remaining.front() == "--") {
    remaining.erase(remaining.begin());
  } else if (!remaining.empty() && remaining.front().starts_with('-')) {
    return absl::InvalidArgumentError(
        absl::StrCat("The following argument was not expected: ", remaining.front()));
  }
  if (remaining.empty()) {
    return absl::InvalidArgumentError("PROGRAM is required: lockstep-run -n N [--] PROGRAM [ARGS]");
  }
  if (flags.node_rank >= flags.nnodes) {
    return absl::InvalidArgumentError(
        absl::StrCat("--node-rank ", flags.node_rank, " is not below --nnodes ", flags.nnodes));
  }
  if (flags.nnodes > 1 && flags.master.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--master HOST:PORT is required with --nnodes ", flags.nnodes,
                     ": the address of node 0, where rank 0 serves the rendezvous"));
  }
  RunPlan plan{.nproc_per_node = flags.nproc_per_node,
               .nnodes = flags.nnodes,
               .node_rank = flags.node_rank,
               .max_restarts = flags.max_restarts,
               .run_id = flags.run_id,
               .command = std::move(remaining)};
  if (!flags.master.empty()) {
    LS_ASSIGN_OR_RETURN(plan.master, ParseEndpoint(flags.master));
  }
  if (plan.run_id.empty()) plan.run_id = DefaultRunId(flags);
  return plan;
}

std::vector<std::pair<std::string, std::string>> ContractVariables(const RunPlan& plan,
                                                                   const Endpoint& master,
                                                                   int local_rank,
                                                                   int restart_count) {
  const int n = plan.nproc_per_node;
  return {
      {"RANK", absl::StrCat(plan.node_rank * n + local_rank)},
      {"WORLD_SIZE", absl::StrCat(plan.nnodes * n)},
      {"LOCAL_RANK", absl::StrCat(local_rank)},
      {"LOCAL_WORLD_SIZE", absl::StrCat(n)},
      {"GROUP_RANK", absl::StrCat(plan.node_rank)},
      {"MASTER_ADDR", master.host},
      {"MASTER_PORT", absl::StrCat(master.port)},
      {"TORCHELASTIC_RUN_ID", plan.run_id},
      {"TORCHELASTIC_RESTART_COUNT", absl::StrCat(restart_count)},
      {"TORCHELASTIC_MAX_RESTARTS", absl::StrCat(plan.max_restarts)},
      {"LOCKSTEP_RUN", "1"},
  };
}

}  // namespace lockstep::run
