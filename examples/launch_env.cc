#include "examples/launch_env.h"

#include <cstdint>
#include <initializer_list>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace lockstep {
namespace {

// A variable that is set, and its value.
struct Var {
  const char* name;
  std::string value;
};

// Unset and empty alike are nullopt, as everywhere in env_options.h.
std::optional<Var> Get(const EnvLookup& lookup, const char* name) {
  const char* value = lookup(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return Var{name, value};
}

// The first of `names` that is set: launchers spell some quantities in several ways.
std::optional<Var> First(const EnvLookup& lookup, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (std::optional<Var> var = Get(lookup, name)) return var;
  }
  return std::nullopt;
}

absl::Status Malformed(const Var& var, absl::string_view expected) {
  return absl::InvalidArgumentError(absl::StrCat(var.name, "='", var.value, "' is not ", expected));
}

std::string Quoted(const Var& var) { return absl::StrCat(var.name, "='", var.value, "'"); }

absl::Status Incomplete(const std::vector<std::string>& set, const std::vector<std::string>& unset,
                        absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      absl::StrJoin(set, ", "), set.size() == 1 ? " is" : " are", " set but ",
      absl::StrJoin(unset, ", "), unset.size() == 1 ? " is not: " : " are not: ", why));
}

// An integer >= min (0 or 1); SimpleAtoi refuses "1.5", "2x" and what overflows an int.
absl::StatusOr<int> Integer(const Var& var, int min) {
  int value = 0;
  if (!absl::SimpleAtoi(var.value, &value) || value < min) {
    return Malformed(var, min > 0 ? "a positive integer" : "a non-negative integer");
  }
  return value;
}

absl::StatusOr<int> OptionalInteger(const EnvLookup& lookup, const char* name, int fallback) {
  std::optional<Var> var = Get(lookup, name);
  if (!var.has_value()) return fallback;
  return Integer(*var, 0);
}

// Job and step ids are unsigned 32-bit numbers in Slurm, beyond an int.
absl::StatusOr<uint32_t> Id(const Var& var) {
  uint32_t value = 0;
  if (!absl::SimpleAtoi(var.value, &value)) return Malformed(var, "a Slurm id");
  return value;
}

// An index and the count it counts in, such as RANK and WORLD_SIZE: 0 <= index < count.
struct IndexCount {
  int index = 0;
  int count = 1;
};
absl::StatusOr<IndexCount> ReadIndex(const Var& index, const Var& count) {
  LS_ASSIGN_OR_RETURN(const int n, Integer(count, 1));
  LS_ASSIGN_OR_RETURN(const int i, Integer(index, 0));
  if (i >= n) return Malformed(index, absl::StrCat("below ", Quoted(count)));
  return IndexCount{i, n};
}

absl::StatusOr<int> Port(const Var& var) {
  int port = 0;
  if (!absl::SimpleAtoi(var.value, &port) || port < 1 || port > 65535) {
    return Malformed(var, "a port (1 to 65535)");
  }
  return port;
}

// ---- MPI ----

bool StartedBySrun(const EnvLookup& lookup) {
  // A batch script has SLURM_PROCID=0 from its batch step, and an mpirun or torchrun inside an
  // allocation passes the job's variables on; only srun sets the step's own (slurm's env.c).
  return Get(lookup, "SLURM_PROCID").has_value() && Get(lookup, "SLURM_STEP_NUM_TASKS").has_value();
}

// Where the env:// contract's variables are set beside MPI's, they must name the same rank:
// otherwise one launcher ran inside another's environment, and which one is meant is a guess.
absl::Status CheckMpiAgrees(const EnvLookup& lookup) {
  struct Twin {
    const char* name;
    std::optional<Var> mpi;
    int min;  // ranks from 0, sizes from 1
  };
  const Twin twins[] = {
      {"RANK", First(lookup, {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}), 0},
      {"WORLD_SIZE", First(lookup, {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}), 1},
      {"LOCAL_RANK", Get(lookup, "OMPI_COMM_WORLD_LOCAL_RANK"), 0},
      {"LOCAL_WORLD_SIZE", Get(lookup, "OMPI_COMM_WORLD_LOCAL_SIZE"), 1},
  };
  for (const Twin& twin : twins) {
    if (!twin.mpi.has_value()) continue;
    LS_ASSIGN_OR_RETURN(const int mpi_value, Integer(*twin.mpi, twin.min));
    std::optional<Var> env = Get(lookup, twin.name);
    if (!env.has_value()) continue;
    LS_ASSIGN_OR_RETURN(const int env_value, Integer(*env, twin.min));
    if (env_value != mpi_value) {
      return absl::InvalidArgumentError(absl::StrCat(
          Quoted(*env), " and ", Quoted(*twin.mpi),
          " disagree: the process sees two launchers' ranks (the env:// contract's and MPI's); "
          "unset those of the launcher that did not start it"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<LaunchEnv>> ReadMpi(const EnvLookup& lookup) {
  if (!First(lookup, {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"}).has_value()) {
    return std::nullopt;
  }
  LS_RETURN_IF_ERROR(CheckMpiAgrees(lookup));
  LaunchEnv env;
  env.mpi = true;
  // Open MPI's mpirun (and prterun) set OMPI_COMM_WORLD_SIZE for the processes they fork; srun
  // --mpi=pmix or pmi2 sets PMIX_RANK or PMI_RANK and the step's variables only.
  env.launcher =
      !Get(lookup, "OMPI_COMM_WORLD_SIZE").has_value() && StartedBySrun(lookup) ? "srun" : "mpirun";
  return env;
}

// ---- The env:// contract: torchrun, lockstep-run, processes started by hand ----

// Any of these set means a launcher of the contract started the process. MASTER_ADDR and
// MASTER_PORT alone do not: batch scripts export them for a plain srun too.
constexpr const char* kContractMarkers[] = {
    "RANK",       "WORLD_SIZE",          "LOCAL_RANK",  "LOCAL_WORLD_SIZE",
    "GROUP_RANK", "TORCHELASTIC_RUN_ID", "LOCKSTEP_RUN"};
constexpr const char* kContractRequired[] = {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"};

// torchrun writes Python's str(bool).
absl::StatusOr<bool> AgentStore(const EnvLookup& lookup) {
  std::optional<Var> var = Get(lookup, "TORCHELASTIC_USE_AGENT_STORE");
  if (!var.has_value()) return false;
  if (var->value == "True" || var->value == "true" || var->value == "1") return true;
  if (var->value == "False" || var->value == "false" || var->value == "0") return false;
  return Malformed(*var, "True or False");
}

absl::StatusOr<std::string> ContractLauncher(const EnvLookup& lookup) {
  // lockstep-run sets the torchrun variables too, TORCHELASTIC_RUN_ID among them.
  if (std::optional<Var> ours = Get(lookup, "LOCKSTEP_RUN")) {
    if (ours->value != "1") return Malformed(*ours, "1 (lockstep-run sets it)");
    return std::string("lockstep-run");
  }
  if (Get(lookup, "TORCHELASTIC_RUN_ID").has_value()) return std::string("torchrun");
  return std::string("env");
}

// LOCAL_RANK, LOCAL_WORLD_SIZE and GROUP_RANK into `r`, whose rank and size are read.
absl::Status ReadContractLocal(const EnvLookup& lookup, const Var& world, parallel::Rendezvous* r) {
  std::optional<Var> local_rank = Get(lookup, "LOCAL_RANK");
  std::optional<Var> local_size = Get(lookup, "LOCAL_WORLD_SIZE");
  if (local_rank.has_value() != local_size.has_value()) {
    return Incomplete({local_rank.has_value() ? "LOCAL_RANK" : "LOCAL_WORLD_SIZE"},
                      {local_rank.has_value() ? "LOCAL_WORLD_SIZE" : "LOCAL_RANK"},
                      "torchrun sets both; neither means one process per host");
  }
  // Neither: one process per host or pod, as Kubernetes' PyTorchJob starts them.
  if (local_rank.has_value()) {
    LS_ASSIGN_OR_RETURN(const IndexCount local, ReadIndex(*local_rank, *local_size));
    if (local.count > r->size) return Malformed(*local_size, "at most " + Quoted(world));
    r->local_rank = local.index;
    r->local_size = local.count;
  }
  if (std::optional<Var> group = Get(lookup, "GROUP_RANK")) {
    LS_ASSIGN_OR_RETURN(const IndexCount node, ReadIndex(*group, world));
    r->node_rank = node.index;
  } else {
    r->node_rank = r->rank / r->local_size;  // the host's index when every host has as many
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<LaunchEnv>> ReadContract(const EnvLookup& lookup) {
  std::vector<std::string> set;
  for (const char* name : kContractMarkers) {
    if (Get(lookup, name).has_value()) set.push_back(name);
  }
  if (set.empty()) return std::nullopt;
  std::vector<std::string> unset;
  for (const char* name : {"MASTER_ADDR", "MASTER_PORT"}) {
    if (Get(lookup, name).has_value()) set.push_back(name);
  }
  for (const char* name : kContractRequired) {
    if (!Get(lookup, name).has_value()) unset.push_back(name);
  }
  if (!unset.empty()) {
    return Incomplete(set, unset,
                      "a launcher of the env:// contract (torchrun, lockstep-run, a PyTorchJob) "
                      "sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT");
  }
  const Var world = *Get(lookup, "WORLD_SIZE");
  parallel::Rendezvous r;
  LS_ASSIGN_OR_RETURN(const IndexCount global, ReadIndex(*Get(lookup, "RANK"), world));
  r.rank = global.index;
  r.size = global.count;
  LS_RETURN_IF_ERROR(ReadContractLocal(lookup, world, &r));
  r.master_addr = Get(lookup, "MASTER_ADDR")->value;
  LS_ASSIGN_OR_RETURN(r.master_port, Port(*Get(lookup, "MASTER_PORT")));
  LS_ASSIGN_OR_RETURN(r.agent_store, AgentStore(lookup));
  if (std::optional<Var> run_id = Get(lookup, "TORCHELASTIC_RUN_ID")) r.run_id = run_id->value;
  LS_ASSIGN_OR_RETURN(r.restart_count, OptionalInteger(lookup, "TORCHELASTIC_RESTART_COUNT", 0));
  LaunchEnv env;
  LS_ASSIGN_OR_RETURN(env.launcher, ContractLauncher(lookup));
  LS_ASSIGN_OR_RETURN(env.max_restarts, OptionalInteger(lookup, "TORCHELASTIC_MAX_RESTARTS", 0));
  env.rendezvous = std::move(r);
  return env;
}

// ---- A plain srun (no --mpi) ----

// The step's variables; where Slurm has several spellings, the first that is set: the step's own
// before the job's (srun --preserve-env keeps the job's SLURM_TASKS_PER_NODE).
struct SrunVars {
  std::optional<Var> procid, ntasks, localid, nodeid, tasks_per_node, nodelist, job, step;
};

absl::StatusOr<SrunVars> RequireSrunVars(const EnvLookup& lookup) {
  SrunVars v{
      .procid = Get(lookup, "SLURM_PROCID"),
      .ntasks = Get(lookup, "SLURM_STEP_NUM_TASKS"),
      .localid = Get(lookup, "SLURM_LOCALID"),
      .nodeid = Get(lookup, "SLURM_NODEID"),
      .tasks_per_node = First(lookup, {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}),
      .nodelist = First(lookup, {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}),
      .job = First(lookup, {"SLURM_JOB_ID", "SLURM_JOBID"}),
      .step = First(lookup, {"SLURM_STEP_ID", "SLURM_STEPID"})};
  std::vector<std::string> unset;
  if (!v.localid) unset.push_back("SLURM_LOCALID");
  if (!v.nodeid) unset.push_back("SLURM_NODEID");
  if (!v.tasks_per_node) unset.push_back("SLURM_STEP_TASKS_PER_NODE");
  // MASTER_ADDR, where a batch script exports it, names the master instead.
  if (!v.nodelist && !Get(lookup, "MASTER_ADDR")) unset.push_back("SLURM_STEP_NODELIST");
  if (!v.job) unset.push_back("SLURM_JOB_ID");
  if (!v.step) unset.push_back("SLURM_STEP_ID");
  if (!unset.empty()) {
    return Incomplete({"SLURM_PROCID", "SLURM_STEP_NUM_TASKS"}, unset,
                      "srun sets them for every task");
  }
  return v;
}

// The tasks on node `nodeid` of the step, checked against the step's task count.
absl::StatusOr<int> TasksOnNode(const SrunVars& v, int size) {
  absl::StatusOr<std::vector<TaskRun>> runs = ParseTasksPerNode(v.tasks_per_node->value);
  if (!runs.ok()) {
    return Malformed(*v.tasks_per_node, absl::StrCat("Slurm's tasks per node such as 2(x3),1 (",
                                                     runs.status().message(), ")"));
  }
  int64_t total = 0;
  int64_t nodes = 0;
  for (const TaskRun& run : *runs) {
    total += int64_t{run.tasks} * run.nodes;
    nodes += run.nodes;
  }
  if (total != size) {
    return Malformed(*v.tasks_per_node, absl::StrCat("a layout of ", Quoted(*v.ntasks), " tasks"));
  }
  LS_ASSIGN_OR_RETURN(int node, Integer(*v.nodeid, 0));
  for (const TaskRun& run : *runs) {
    if (node < run.nodes) return run.tasks;
    node -= run.nodes;
  }
  return Malformed(*v.nodeid,
                   absl::StrCat("below the ", nodes, " nodes of ", Quoted(*v.tasks_per_node)));
}

absl::StatusOr<std::string> SrunMaster(const EnvLookup& lookup, const SrunVars& v) {
  if (std::optional<Var> addr = Get(lookup, "MASTER_ADDR")) return addr->value;
  // Task 0 runs on the step's first host under Slurm's block, cyclic and plane distributions.
  absl::StatusOr<std::vector<std::string>> first = ExpandHostlist(v.nodelist->value, 1);
  if (!first.ok()) {
    return Malformed(*v.nodelist,
                     absl::StrCat("a Slurm hostlist (", first.status().message(), ")"));
  }
  return first->front();
}

absl::StatusOr<int> SrunPort(const EnvLookup& lookup, uint32_t job) {
  if (std::optional<Var> port = Get(lookup, "MASTER_PORT")) return Port(*port);
  // srun --resv-ports (or MpiParams=ports=) reserves ports free on every node of the step.
  if (std::optional<Var> reserved = Get(lookup, "SLURM_STEP_RESV_PORTS")) {
    const absl::string_view text = reserved->value;
    const absl::string_view first = text.substr(0, text.find_first_of("-,"));
    int port = 0;
    if (!absl::SimpleAtoi(first, &port) || port < 1 || port > 65535) {
      return Malformed(*reserved, "a port range such as 12000-12003");
    }
    return port;
  }
  // Else one per job below Linux's ephemeral ports (32768 up): jobs whose first hosts
  // coincide differ unless their ids differ by a multiple of 1000.
  return 29500 + static_cast<int>(job % 1000);
}

absl::StatusOr<std::optional<LaunchEnv>> ReadSrun(const EnvLookup& lookup) {
  if (!StartedBySrun(lookup)) return std::nullopt;
  LS_ASSIGN_OR_RETURN(const SrunVars v, RequireSrunVars(lookup));
  parallel::Rendezvous r;
  LS_ASSIGN_OR_RETURN(const IndexCount global, ReadIndex(*v.procid, *v.ntasks));
  r.rank = global.index;
  r.size = global.count;
  LS_ASSIGN_OR_RETURN(r.local_size, TasksOnNode(v, r.size));
  LS_ASSIGN_OR_RETURN(r.local_rank, Integer(*v.localid, 0));
  if (r.local_rank >= r.local_size) {
    return Malformed(*v.localid,
                     absl::StrCat("below the ", r.local_size, " tasks that ",
                                  Quoted(*v.tasks_per_node), " places on ", Quoted(*v.nodeid)));
  }
  LS_ASSIGN_OR_RETURN(r.node_rank, Integer(*v.nodeid, 0));
  LS_ASSIGN_OR_RETURN(r.master_addr, SrunMaster(lookup, v));
  LS_ASSIGN_OR_RETURN(const uint32_t job, Id(*v.job));
  LS_ASSIGN_OR_RETURN(const uint32_t step, Id(*v.step));
  LS_ASSIGN_OR_RETURN(r.master_port, SrunPort(lookup, job));
  r.run_id = absl::StrCat(job, ".", step);  // as sacct writes a step
  // Slurm counts the requeues of a batch job; its steps inherit the count.
  LS_ASSIGN_OR_RETURN(r.restart_count, OptionalInteger(lookup, "SLURM_RESTART_COUNT", 0));
  LaunchEnv env;
  env.launcher = "srun";
  env.rendezvous = std::move(r);
  return env;
}

// ---- Slurm's syntax ----

// The numbers of one bracket: "01-03,07" is {1, 3, 2}, {7, 7, 2}.
struct Range {
  uint64_t first = 0;
  uint64_t last = 0;
  size_t width = 0;  // zero-padded to the first number's digits
};
// A name with brackets: parts.size() == brackets.size() + 1, the brackets between the parts.
struct HostPattern {
  std::vector<std::string> parts;
  std::vector<std::vector<Range>> brackets;
};

absl::StatusOr<uint64_t> Digits(absl::string_view text, absl::string_view bracket) {
  uint64_t value = 0;
  // 18 digits keep every number and every count of them within uint64_t.
  if (text.empty() || text.size() > 18 || !absl::c_all_of(text, absl::ascii_isdigit) ||
      !absl::SimpleAtoi(text, &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' in [", bracket, "] is not a number"));
  }
  return value;
}

absl::StatusOr<std::vector<Range>> ParseBracket(absl::string_view inside) {
  std::vector<Range> ranges;
  for (absl::string_view item : absl::StrSplit(inside, ',')) {
    const size_t dash = item.find('-');
    const absl::string_view first = item.substr(0, dash);
    const absl::string_view last = dash == absl::string_view::npos ? first : item.substr(dash + 1);
    Range range{.width = first.size()};
    LS_ASSIGN_OR_RETURN(range.first, Digits(first, inside));
    LS_ASSIGN_OR_RETURN(range.last, Digits(last, inside));
    if (range.last < range.first) {
      return absl::InvalidArgumentError(
          absl::StrCat("the range ", item, " in [", inside, "] runs backwards"));
    }
    ranges.push_back(range);
  }
  return ranges;
}

absl::StatusOr<std::vector<HostPattern>> ParseHostlist(absl::string_view list) {
  std::vector<HostPattern> patterns(1);
  patterns.back().parts.emplace_back();
  for (size_t i = 0; i < list.size(); ++i) {
    const char c = list[i];
    HostPattern& pattern = patterns.back();
    if (c == ',') {
      patterns.emplace_back().parts.emplace_back();
    } else if (c == '[') {
      const size_t close = list.find_first_of("[]", i + 1);
      if (close == absl::string_view::npos || list[close] != ']') {
        return absl::InvalidArgumentError(absl::StrCat("the '[' at ", i, " is not closed"));
      }
      LS_ASSIGN_OR_RETURN(std::vector<Range> bracket,
                          ParseBracket(list.substr(i + 1, close - i - 1)));
      pattern.brackets.push_back(std::move(bracket));
      pattern.parts.emplace_back();
      i = close;
    } else if (c == ']') {
      return absl::InvalidArgumentError(absl::StrCat("the ']' at ", i, " closes no '['"));
    } else {
      pattern.parts.back().push_back(c);
    }
  }
  for (const HostPattern& pattern : patterns) {
    if (pattern.brackets.empty() && pattern.parts.front().empty()) {
      return absl::InvalidArgumentError("a host name is empty");
    }
  }
  return patterns;
}

std::string Padded(uint64_t number, size_t width) {
  std::string text = absl::StrCat(number);
  if (text.size() < width) text.insert(0, width - text.size(), '0');
  return text;
}

// Appends the hosts of `pattern` from its bracket `k` on, after `prefix`, up to `max_hosts`.
void Expand(const HostPattern& pattern, size_t k, const std::string& prefix, size_t max_hosts,
            std::vector<std::string>* hosts) {
  if (k == pattern.brackets.size()) {
    hosts->push_back(prefix);
    return;
  }
  for (const Range& range : pattern.brackets[k]) {
    for (uint64_t n = range.first; n <= range.last && hosts->size() < max_hosts; ++n) {
      Expand(pattern, k + 1, prefix + Padded(n, range.width) + pattern.parts[k + 1], max_hosts,
             hosts);
    }
  }
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandHostlist(absl::string_view hostlist,
                                                        size_t max_hosts) {
  LS_ASSIGN_OR_RETURN(const std::vector<HostPattern> patterns, ParseHostlist(hostlist));
  std::vector<std::string> hosts;
  for (const HostPattern& pattern : patterns) {
    if (hosts.size() >= max_hosts) break;
    Expand(pattern, 0, pattern.parts.front(), max_hosts, &hosts);
  }
  return hosts;
}

absl::StatusOr<std::vector<TaskRun>> ParseTasksPerNode(absl::string_view text) {
  std::vector<TaskRun> runs;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    TaskRun run{.nodes = 1};
    absl::string_view tasks = item;
    if (const size_t open = item.find("(x"); open != absl::string_view::npos) {
      tasks = item.substr(0, open);
      if (!absl::EndsWith(item, ")") ||
          !absl::SimpleAtoi(item.substr(open + 2, item.size() - open - 3), &run.nodes) ||
          run.nodes < 1) {
        return absl::InvalidArgumentError(absl::StrCat("'", item, "' is not N or N(xM)"));
      }
    }
    if (!absl::SimpleAtoi(tasks, &run.tasks) || run.tasks < 0) {
      return absl::InvalidArgumentError(absl::StrCat("'", item, "' is not N or N(xM)"));
    }
    runs.push_back(run);
  }
  return runs;
}

absl::StatusOr<LaunchEnv> ReadLaunchEnv(const EnvLookup& lookup) {
  // MPI first: the process talks over what started it, whatever an outer launcher left behind.
  LS_ASSIGN_OR_RETURN(std::optional<LaunchEnv> mpi, ReadMpi(lookup));
  if (mpi.has_value()) return *std::move(mpi);
  // torchrun inside an srun step (one agent per node) sees the step's variables too: its own
  // describe the workers.
  LS_ASSIGN_OR_RETURN(std::optional<LaunchEnv> contract, ReadContract(lookup));
  if (contract.has_value()) return *std::move(contract);
  LS_ASSIGN_OR_RETURN(std::optional<LaunchEnv> srun, ReadSrun(lookup));
  if (srun.has_value()) return *std::move(srun);
  return LaunchEnv{};  // a world of one
}

}  // namespace lockstep
