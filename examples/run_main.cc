// lockstep-run: starts a job's ranks on this host without MPI or Python, in the manner of
// MindSpore's msrun and `torchrun --standalone`, with torchrun's env:// contract, which the
// Lockstep binaries read. Rank 0 serves the rendezvous store at MASTER_ADDR:MASTER_PORT, so
// lockstep-run itself serves none.
//
//   lockstep-run -n 4 lockstep-train --data DIR --ckpt-dir CKPT
//   lockstep-run -n 4 --nnodes 2 --node-rank R --master hostA:29500 --max-restarts 3 -- PROGRAM ...

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "examples/flag_checks.h"
#include "examples/run_group.h"
#include "examples/run_plan.h"
#include "examples/run_signals.h"

extern char** environ;

namespace lockstep::run {
namespace {

constexpr char kDescription[] =
    "Starts -n ranks of PROGRAM on this host with torchrun's env:// contract: RANK, WORLD_SIZE,\n"
    "LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RUN_ID,\n"
    "TORCHELASTIC_RESTART_COUNT, TORCHELASTIC_MAX_RESTARTS and LOCKSTEP_RUN=1. Rank 0 serves\n"
    "the rendezvous at MASTER_ADDR:MASTER_PORT.\n";

// CLI11's usage line would say "[OPTIONS]" only: the command after them is its remaining
// arguments.
class UsageFormatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App*, std::string) const override {
    return "Usage: lockstep-run -n N [--nnodes N --node-rank R --master HOST:PORT] "
           "[--max-restarts K] [--run-id ID] [--] PROGRAM [ARGS...]\n";
  }
};

constexpr char kFooter[] =
    "Every line a rank writes comes out prefixed with \"[rank R] \", its stdout on stdout and its\n"
    "stderr on stderr; the ranks' stdin is /dev/null. SIGINT, SIGTERM and SIGHUP are passed on\n"
    "to every rank (SIGKILL after a second one, or after 5 s). When a rank exits non-zero or by\n"
    "a signal, the others are ended, one line names it with its last line of stderr, and\n"
    "lockstep-run exits with its status (128 + the signal); 127 when PROGRAM is not found, 126\n"
    "when it cannot be executed, 2 for a usage error.\n"
    "--max-restarts starts this host's group again, with TORCHELASTIC_RESTART_COUNT one more and\n"
    "the arguments unchanged: give lockstep-train --resume DIR with its --ckpt-dir DIR, which\n"
    "starts fresh when DIR holds nothing and resumes from its newest complete step after a\n"
    "restart. It restarts this host's group only: the ranks of other hosts fail through\n"
    "their collective timeout and restart under their own lockstep-run.";

void Say(absl::string_view line) { std::cerr << "lockstep-run: " << line << std::endl; }

// A closed stdin, stdout or stderr would let a rank's pipe take its number, which the rank's
// dup2 onto itself would then leave to close at exec.
void OpenStandardDescriptors() {
  int fd;
  while ((fd = open("/dev/null", O_RDWR)) >= 0 && fd <= STDERR_FILENO) {
  }
  if (fd > STDERR_FILENO) close(fd);
}

// A port free now, which the kernel picked (pytorch/pytorch#126510); rank 0 binds it soon after.
absl::StatusOr<Endpoint> FreeLocalEndpoint() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t size = sizeof address;
  const bool ok = fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&address), size) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) == 0;
  const int error = errno;
  if (fd >= 0) close(fd);
  if (!ok) {
    return absl::UnavailableError(absl::StrCat(
        "no free port for the rendezvous: ", std::strerror(error), " (give --master)"));
  }
  return Endpoint{"127.0.0.1", ntohs(address.sin_port)};
}

// lockstep-run's environment with `variables` set over it.
std::vector<std::string> RankEnvironment(
    const std::vector<std::pair<std::string, std::string>>& variables) {
  auto replaced = [&](absl::string_view name) {
    return std::any_of(variables.begin(), variables.end(),
                       [&](const auto& variable) { return variable.first == name; }) ||
           std::find(std::begin(kUnsetVariables), std::end(kUnsetVariables), name) !=
               std::end(kUnsetVariables);
  };
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const absl::string_view text(*entry);
    if (!replaced(text.substr(0, text.find('=')))) env.emplace_back(text);
  }
  for (const auto& [name, value] : variables) env.push_back(absl::StrCat(name, "=", value));
  return env;
}

std::vector<RankLaunch> Launches(const RunPlan& plan, const Endpoint& master, int restart_count) {
  std::vector<RankLaunch> launches;
  for (int local_rank = 0; local_rank < plan.nproc_per_node; ++local_rank) {
    launches.push_back(
        {.rank = plan.node_rank * plan.nproc_per_node + local_rank,
         .env = RankEnvironment(ContractVariables(plan, master, local_rank, restart_count))});
  }
  return launches;
}

// Attempts until one succeeds, fails past --max-restarts, or a signal stops the job.
int Run(const RunPlan& plan, int signal_fd) {
  for (int restart = 0;; ++restart) {
    // A port picked free is picked again: the last attempt's may linger in TIME_WAIT.
    absl::StatusOr<Endpoint> master = plan.master ? *plan.master : FreeLocalEndpoint();
    if (!master.ok()) {
      Say(absl::StrCat("error: ", master.status().message()));
      return 1;
    }
    const GroupOutcome outcome =
        RunGroup(plan.command, Launches(plan, *master, restart), signal_fd);
    const bool failed = outcome.kind != GroupOutcome::Kind::kSucceeded;
    if (outcome.stop_signal != 0) {
      const std::string described = Describe(outcome);
      Say(absl::StrCat("stopped by ", SignalName(outcome.stop_signal),
                       described.empty() ? "" : (failed ? " after " : "; "), described));
      DieBySignal(outcome.stop_signal);
    }
    if (!failed) return 0;
    if (outcome.kind == GroupOutcome::Kind::kRankFailed && restart < plan.max_restarts) {
      Say(absl::StrCat("restart ", restart + 1, " of ", plan.max_restarts, " after ",
                       Describe(outcome)));
      continue;
    }
    Say(Describe(outcome));
    return outcome.exit_code;
  }
}

int Main(int argc, char** argv) {
  OpenStandardDescriptors();
  RunFlags flags;
  CLI::App app{kDescription, "lockstep-run"};
  app.footer(kFooter);
  app.formatter(std::make_shared<UsageFormatter>());
  AddRunFlags(app, flags);
  absl::StatusOr<ParseOutcome> parsed = ParseCommandLine(app, argc, argv);
  if (parsed.ok() && *parsed == ParseOutcome::kHelp) {
    std::cout << app.help();
    return 0;
  }
  // ParseCommandLine's messages end with "(see --help)" already.
  absl::StatusOr<RunPlan> plan =
      parsed.ok() ? MakeRunPlan(flags, app.remaining()) : absl::StatusOr<RunPlan>(parsed.status());
  if (!plan.ok()) {
    Say(absl::StrCat("error: ", plan.status().message(), parsed.ok() ? " (see --help)" : ""));
    return 2;
  }
  absl::StatusOr<int> signal_fd = InstallSignalPipe();
  if (!signal_fd.ok()) {
    Say(absl::StrCat("error: ", signal_fd.status().message()));
    return 1;
  }
  return Run(*plan, *signal_fd);
}

}  // namespace
}  // namespace lockstep::run

int main(int argc, char** argv) { return lockstep::run::Main(argc, argv); }
