// What the binaries read from the environment (examples/env_options.h): defaults when unset,
// the documented meanings, and malformed values refused with the variable and the value named;
// which launcher started the process (examples/launch_env.h) from the variables each one sets.

#include "examples/env_options.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "examples/launch_env.h"

namespace lockstep {
namespace {

using std::chrono::milliseconds;
using Env = std::map<std::string, std::string>;

absl::StatusOr<EnvOptions> Parse(const std::map<std::string, std::string>& env) {
  return ParseEnvOptions([&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

// `base` with `changes` applied; an empty value unsets (as the parser counts it).
Env With(Env base, const Env& changes) {
  for (const auto& [name, value] : changes) base[name] = value;
  return base;
}

void ExpectRefused(const Env& env, const std::string& message) {
  absl::StatusOr<EnvOptions> options = Parse(env);
  ASSERT_FALSE(options.ok()) << message;
  EXPECT_EQ(options.status().code(), absl::StatusCode::kInvalidArgument) << message;
  EXPECT_EQ(options.status().message(), message);
}

// What torchrun --nnodes 2 --nproc-per-node 4 gives the second worker of the second host (torch's
// local_elastic_agent.py), after one restart.
const Env kTorchrun = {{"LOCAL_RANK", "1"},
                       {"RANK", "5"},
                       {"GROUP_RANK", "1"},
                       {"ROLE_RANK", "5"},
                       {"ROLE_NAME", "default"},
                       {"LOCAL_WORLD_SIZE", "4"},
                       {"WORLD_SIZE", "8"},
                       {"GROUP_WORLD_SIZE", "2"},
                       {"ROLE_WORLD_SIZE", "8"},
                       {"MASTER_ADDR", "host0.example"},
                       {"MASTER_PORT", "29400"},
                       {"TORCHELASTIC_RESTART_COUNT", "1"},
                       {"TORCHELASTIC_MAX_RESTARTS", "3"},
                       {"TORCHELASTIC_RUN_ID", "job-7"},
                       {"TORCHELASTIC_USE_AGENT_STORE", "True"}};

// What Kubernetes' PyTorchJob gives the pod of worker 2 of 4: one process per pod.
const Env kPyTorchJob = {
    {"RANK", "2"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "job-master-0"}, {"MASTER_PORT", "23456"}};

// What srun -N2 -n4 (no --mpi) gives task 3, the second on the second node, in job 123456 of four
// nodes and --ntasks-per-node=4, requeued once (Slurm's src/common/env.c).
const Env kSrun = {{"SLURM_JOB_ID", "123456"},
                   {"SLURM_JOBID", "123456"},
                   {"SLURM_JOB_NODELIST", "gpu[007-009],cpu1"},
                   {"SLURM_NODELIST", "gpu[007-009],cpu1"},
                   {"SLURM_NTASKS", "4"},
                   {"SLURM_NTASKS_PER_NODE", "4"},  // the job's request, not this step's
                   {"SLURM_TASKS_PER_NODE", "2(x2)"},
                   {"SLURM_RESTART_COUNT", "1"},
                   {"SLURM_STEP_ID", "2"},
                   {"SLURM_STEPID", "2"},
                   {"SLURM_STEP_NODELIST", "gpu[008-009]"},
                   {"SLURM_STEP_NUM_NODES", "2"},
                   {"SLURM_STEP_NUM_TASKS", "4"},
                   {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},
                   {"SLURM_PROCID", "3"},
                   {"SLURM_LOCALID", "1"},
                   {"SLURM_NODEID", "1"}};

TEST(EnvOptionsTest, DefaultsWhenUnset) {
  absl::StatusOr<EnvOptions> options = Parse({});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_FALSE(options->init.mpi);
  EXPECT_EQ(options->init.comm.collective_timeout, milliseconds(300000));
  EXPECT_EQ(options->init.comm.allreduce_segment_bytes, size_t{2} << 20);
  EXPECT_TRUE(options->overlap_communication);
  EXPECT_EQ(options->dump_dir, "");
  EXPECT_TRUE(options->math.allow_tf32);
  EXPECT_TRUE(options->math.deterministic);
}

TEST(EnvOptionsTest, ValuesAsDocumented) {
  absl::StatusOr<EnvOptions> options = Parse({{"OMPI_COMM_WORLD_SIZE", "2"},
                                              {"LOCKSTEP_COLLECTIVE_TIMEOUT_S", "2.5"},
                                              {"LOCKSTEP_ALLREDUCE_SEGMENT_MB", "0.5"},
                                              {"LOCKSTEP_OVERLAP_COMM", "0"},
                                              {"LOCKSTEP_DUMP_GRAPH", "/tmp/dumps"},
                                              {"LOCKSTEP_CUDA_TF32", "0"},
                                              {"LOCKSTEP_DETERMINISTIC", "0"}});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_TRUE(options->init.mpi);
  EXPECT_EQ(options->init.comm.collective_timeout, milliseconds(2500));
  EXPECT_EQ(options->init.comm.allreduce_segment_bytes, size_t{1} << 19);
  EXPECT_FALSE(options->overlap_communication);
  EXPECT_EQ(options->dump_dir, "/tmp/dumps");
  EXPECT_FALSE(options->math.allow_tf32);
  EXPECT_FALSE(options->math.deterministic);
  // 0 sends each AllReduce as one call; an empty value counts as unset.
  options = Parse({{"LOCKSTEP_ALLREDUCE_SEGMENT_MB", "0"}, {"LOCKSTEP_COLLECTIVE_TIMEOUT_S", ""}});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->init.comm.allreduce_segment_bytes, 0u);
  EXPECT_EQ(options->init.comm.collective_timeout, milliseconds(300000));
  for (const char* launcher : {"PMIX_RANK", "PMI_RANK"}) {
    EXPECT_TRUE(Parse({{launcher, "0"}})->init.mpi) << launcher;
  }
}

TEST(EnvOptionsTest, MalformedValuesAreRefusedByName) {
  const std::map<std::string, std::string> cases = {
      {"LOCKSTEP_COLLECTIVE_TIMEOUT_S='soon' is not a number of seconds",
       "LOCKSTEP_COLLECTIVE_TIMEOUT_S=soon"},
      {"LOCKSTEP_COLLECTIVE_TIMEOUT_S='5s' is not a number of seconds",
       "LOCKSTEP_COLLECTIVE_TIMEOUT_S=5s"},
      {"LOCKSTEP_COLLECTIVE_TIMEOUT_S='0' is not a positive number of seconds",
       "LOCKSTEP_COLLECTIVE_TIMEOUT_S=0"},
      {"LOCKSTEP_COLLECTIVE_TIMEOUT_S='-3' is not a positive number of seconds",
       "LOCKSTEP_COLLECTIVE_TIMEOUT_S=-3"},
      {"LOCKSTEP_COLLECTIVE_TIMEOUT_S='nan' is not a positive number of seconds",
       "LOCKSTEP_COLLECTIVE_TIMEOUT_S=nan"},
      {"LOCKSTEP_ALLREDUCE_SEGMENT_MB='-1' is not a non-negative number of MiB",
       "LOCKSTEP_ALLREDUCE_SEGMENT_MB=-1"},
      {"LOCKSTEP_ALLREDUCE_SEGMENT_MB='2MB' is not a number of MiB",
       "LOCKSTEP_ALLREDUCE_SEGMENT_MB=2MB"},
      {"LOCKSTEP_OVERLAP_COMM='yes' is not 1 or 0", "LOCKSTEP_OVERLAP_COMM=yes"},
      {"LOCKSTEP_CUDA_TF32='off' is not 1 or 0", "LOCKSTEP_CUDA_TF32=off"},
      {"LOCKSTEP_DETERMINISTIC='no' is not 1 or 0", "LOCKSTEP_DETERMINISTIC=no"},
  };
  for (const auto& [message, assignment] : cases) {
    const size_t equals = assignment.find('=');
    absl::StatusOr<EnvOptions> options =
        Parse({{assignment.substr(0, equals), assignment.substr(equals + 1)}});
    ASSERT_FALSE(options.ok()) << assignment;
    EXPECT_EQ(options.status().code(), absl::StatusCode::kInvalidArgument) << assignment;
    EXPECT_EQ(options.status().message(), message);
  }
}

TEST(EnvOptionsTest, TorchrunsFullSet) {
  absl::StatusOr<EnvOptions> options = Parse(kTorchrun);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_FALSE(options->init.mpi);
  EXPECT_EQ(options->init.launcher, "torchrun");
  ASSERT_TRUE(options->init.rendezvous.has_value());
  const parallel::Rendezvous& r = *options->init.rendezvous;
  EXPECT_EQ(r.rank, 5);
  EXPECT_EQ(r.size, 8);
  EXPECT_EQ(r.local_rank, 1);
  EXPECT_EQ(r.local_size, 4);
  EXPECT_EQ(r.node_rank, 1);
  EXPECT_EQ(r.master_addr, "host0.example");
  EXPECT_EQ(r.master_port, 29400);
  EXPECT_TRUE(r.agent_store);
  EXPECT_EQ(r.run_id, "job-7");
  EXPECT_EQ(r.restart_count, 1);
  EXPECT_EQ(options->max_restarts, 3);

  // lockstep-run sets the same variables and LOCKSTEP_RUN=1.
  options = Parse(With(kTorchrun, {{"LOCKSTEP_RUN", "1"}}));
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->init.launcher, "lockstep-run");
  // The agent store in every spelling; without GROUP_RANK, the host from the local size.
  for (const char* yes : {"True", "true", "1"}) {
    options = Parse(With(kTorchrun, {{"TORCHELASTIC_USE_AGENT_STORE", yes}, {"GROUP_RANK", ""}}));
    ASSERT_TRUE(options.ok()) << options.status();
    EXPECT_TRUE(options->init.rendezvous->agent_store) << yes;
    EXPECT_EQ(options->init.rendezvous->node_rank, 1) << yes;
  }
  options = Parse(With(kTorchrun, {{"TORCHELASTIC_USE_AGENT_STORE", "False"}}));
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_FALSE(options->init.rendezvous->agent_store);

  // torchrun inside an srun step (one agent per node): the workers are torchrun's.
  options = Parse(With(kSrun, kTorchrun));
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->init.launcher, "torchrun");
  EXPECT_EQ(options->init.rendezvous->rank, 5);
  EXPECT_EQ(options->init.rendezvous->master_addr, "host0.example");
}

TEST(EnvOptionsTest, KubernetesMinimalSet) {
  absl::StatusOr<EnvOptions> options = Parse(kPyTorchJob);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_FALSE(options->init.mpi);
  EXPECT_EQ(options->init.launcher, "env");
  ASSERT_TRUE(options->init.rendezvous.has_value());
  const parallel::Rendezvous& r = *options->init.rendezvous;
  EXPECT_EQ(r.rank, 2);
  EXPECT_EQ(r.size, 4);
  // One process per pod: local rank 0 of 1, each pod its own host.
  EXPECT_EQ(r.local_rank, 0);
  EXPECT_EQ(r.local_size, 1);
  EXPECT_EQ(r.node_rank, 2);
  EXPECT_EQ(r.master_addr, "job-master-0");
  EXPECT_EQ(r.master_port, 23456);
  EXPECT_FALSE(r.agent_store);  // rank 0 serves the store
  EXPECT_EQ(r.run_id, "");
  EXPECT_EQ(r.restart_count, 0);
  EXPECT_EQ(options->max_restarts, 0);
  // A world of one stays one: MASTER_ADDR and MASTER_PORT alone start no rendezvous.
  options = Parse({{"MASTER_ADDR", "localhost"}, {"MASTER_PORT", "29500"}});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_FALSE(options->init.rendezvous.has_value());
  EXPECT_EQ(options->init.launcher, "");
}

TEST(EnvOptionsTest, PlainSrun) {
  absl::StatusOr<EnvOptions> options = Parse(kSrun);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_FALSE(options->init.mpi);
  EXPECT_EQ(options->init.launcher, "srun");
  ASSERT_TRUE(options->init.rendezvous.has_value());
  const parallel::Rendezvous& r = *options->init.rendezvous;
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.size, 4);
  EXPECT_EQ(r.local_rank, 1);
  EXPECT_EQ(r.local_size, 2);  // SLURM_STEP_TASKS_PER_NODE's, not SLURM_NTASKS_PER_NODE's 4
  EXPECT_EQ(r.node_rank, 1);
  EXPECT_EQ(r.master_addr, "gpu008");  // the step's first host, not the job's
  EXPECT_EQ(r.master_port, 29500 + 456);
  EXPECT_FALSE(r.agent_store);
  EXPECT_EQ(r.run_id, "123456.2");
  EXPECT_EQ(r.restart_count, 1);

  // Without the step's node list, the job's; uneven nodes take SLURM_NODEID's entry.
  options = Parse(With(kSrun, {{"SLURM_STEP_NODELIST", ""},
                               {"SLURM_STEP_NUM_TASKS", "7"},
                               {"SLURM_STEP_TASKS_PER_NODE", "2(x3),1"},
                               {"SLURM_NODEID", "3"},
                               {"SLURM_PROCID", "6"},
                               {"SLURM_LOCALID", "0"}}));
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->init.rendezvous->master_addr, "gpu007");
  EXPECT_EQ(options->init.rendezvous->local_size, 1);
  EXPECT_EQ(options->init.rendezvous->node_rank, 3);
  // What the batch script exports comes first; then the ports srun --resv-ports reserved.
  options = Parse(With(kSrun, {{"MASTER_ADDR", "10.1.2.3"}, {"MASTER_PORT", "4000"}}));
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->init.rendezvous->master_addr, "10.1.2.3");
  EXPECT_EQ(options->init.rendezvous->master_port, 4000);
  options = Parse(With(kSrun, {{"SLURM_STEP_RESV_PORTS", "12000-12003"}}));
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->init.rendezvous->master_port, 12000);

  // A batch script (SLURM_PROCID=0 from its batch step, no step variables) is a world of one.
  options = Parse({{"SLURM_JOB_ID", "123456"},
                   {"SLURM_JOB_NODELIST", "gpu[007-009],cpu1"},
                   {"SLURM_NTASKS", "8"},
                   {"SLURM_TASKS_PER_NODE", "2(x4)"},
                   {"SLURM_PROCID", "0"},
                   {"SLURM_LOCALID", "0"},
                   {"SLURM_NODEID", "0"}});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_FALSE(options->init.rendezvous.has_value());
  EXPECT_FALSE(options->init.mpi);
  EXPECT_EQ(options->init.launcher, "");
}

TEST(EnvOptionsTest, MpiWinsInsideASlurmAllocation) {
  // mpirun inside the allocation: its ranks inherit the variables of the srun step that started
  // Open MPI's daemon on their host (SLURM_PROCID is the daemon's).
  const Env mpirun = With(kSrun, {{"OMPI_COMM_WORLD_SIZE", "4"},
                                  {"OMPI_COMM_WORLD_RANK", "2"},
                                  {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                                  {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                  {"PMIX_RANK", "2"},
                                  {"SLURM_PROCID", "1"},
                                  {"SLURM_STEP_NUM_TASKS", "2"}});
  absl::StatusOr<EnvOptions> options = Parse(mpirun);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_TRUE(options->init.mpi);
  EXPECT_EQ(options->init.launcher, "mpirun");
  EXPECT_FALSE(options->init.rendezvous.has_value());
  // The env:// names, where a wrapper set them from MPI's, agree and change nothing.
  options = Parse(With(mpirun, {{"RANK", "2"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"}}));
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->init.launcher, "mpirun");
  EXPECT_FALSE(options->init.rendezvous.has_value());

  // srun --mpi=pmix or pmi2 starts the ranks itself: no Open MPI variables yet.
  for (const char* pmi : {"PMIX_RANK", "PMI_RANK"}) {
    options = Parse(With(kSrun, {{pmi, "3"}}));
    ASSERT_TRUE(options.ok()) << options.status();
    EXPECT_TRUE(options->init.mpi) << pmi;
    EXPECT_EQ(options->init.launcher, "srun") << pmi;
    EXPECT_FALSE(options->init.rendezvous.has_value()) << pmi;
  }
  // Outside Slurm, mpirun.
  options = Parse({{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "1"}});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->init.launcher, "mpirun");
}

TEST(EnvOptionsTest, ConflictingRanksAreRefusedByName) {
  const std::string two_launchers =
      " disagree: the process sees two launchers' ranks (the env:// contract's and MPI's); unset "
      "those of the launcher that did not start it";
  ExpectRefused(With(kTorchrun, {{"OMPI_COMM_WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_RANK", "0"}}),
                "RANK='5' and OMPI_COMM_WORLD_RANK='0'" + two_launchers);
  ExpectRefused({{"RANK", "1"}, {"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}},
                "RANK='1' and OMPI_COMM_WORLD_RANK='0'" + two_launchers);
  ExpectRefused(With(kPyTorchJob, {{"PMI_RANK", "2"}, {"PMI_SIZE", "2"}}),
                "WORLD_SIZE='4' and PMI_SIZE='2'" + two_launchers);
  ExpectRefused(With(kTorchrun, {{"PMIX_RANK", "5"},
                                 {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                                 {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}}),
                "LOCAL_RANK='1' and OMPI_COMM_WORLD_LOCAL_RANK='0'" + two_launchers);
}

TEST(EnvOptionsTest, IncompleteSetsAreRefusedByName) {
  const std::string contract =
      ": a launcher of the env:// contract (torchrun, lockstep-run, a PyTorchJob) sets RANK, "
      "WORLD_SIZE, MASTER_ADDR and MASTER_PORT";
  ExpectRefused({{"RANK", "0"}},
                "RANK is set but WORLD_SIZE, MASTER_ADDR, MASTER_PORT are not" + contract);
  ExpectRefused(With(kPyTorchJob, {{"MASTER_ADDR", ""}}),
                "RANK, WORLD_SIZE, MASTER_PORT are set but MASTER_ADDR is not" + contract);
  ExpectRefused({{"TORCHELASTIC_RUN_ID", "job-7"}, {"MASTER_PORT", "29400"}},
                "TORCHELASTIC_RUN_ID, MASTER_PORT are set but RANK, WORLD_SIZE, MASTER_ADDR are "
                "not" +
                    contract);
  ExpectRefused(With(kPyTorchJob, {{"LOCAL_RANK", "0"}}),
                "LOCAL_RANK is set but LOCAL_WORLD_SIZE is not: torchrun sets both; neither means "
                "one process per host");
  ExpectRefused(With(kSrun, {{"SLURM_LOCALID", ""}, {"SLURM_STEP_ID", ""}, {"SLURM_STEPID", ""}}),
                "SLURM_PROCID, SLURM_STEP_NUM_TASKS are set but SLURM_LOCALID, SLURM_STEP_ID are "
                "not: srun sets them for every task");
  ExpectRefused(
      With(kSrun,
           {{"SLURM_STEP_NODELIST", ""}, {"SLURM_JOB_NODELIST", ""}, {"SLURM_NODELIST", ""}}),
      "SLURM_PROCID, SLURM_STEP_NUM_TASKS are set but SLURM_STEP_NODELIST is not: srun "
      "sets them for every task");
}

TEST(EnvOptionsTest, BadNumbersAreRefusedByName) {
  const std::vector<std::pair<Env, std::string>> cases = {
      {With(kPyTorchJob, {{"RANK", "two"}}), "RANK='two' is not a non-negative integer"},
      {With(kPyTorchJob, {{"RANK", "-1"}}), "RANK='-1' is not a non-negative integer"},
      {With(kPyTorchJob, {{"RANK", "1.5"}}), "RANK='1.5' is not a non-negative integer"},
      {With(kPyTorchJob, {{"RANK", "4"}}), "RANK='4' is not below WORLD_SIZE='4'"},
      {With(kPyTorchJob, {{"WORLD_SIZE", "0"}}), "WORLD_SIZE='0' is not a positive integer"},
      {With(kPyTorchJob, {{"WORLD_SIZE", "99999999999"}}),
       "WORLD_SIZE='99999999999' is not a positive integer"},
      {With(kTorchrun, {{"LOCAL_RANK", "4"}}), "LOCAL_RANK='4' is not below LOCAL_WORLD_SIZE='4'"},
      {With(kTorchrun, {{"LOCAL_WORLD_SIZE", "16"}}),
       "LOCAL_WORLD_SIZE='16' is not at most WORLD_SIZE='8'"},
      {With(kTorchrun, {{"GROUP_RANK", "8"}}), "GROUP_RANK='8' is not below WORLD_SIZE='8'"},
      {With(kPyTorchJob, {{"MASTER_PORT", "0"}}), "MASTER_PORT='0' is not a port (1 to 65535)"},
      {With(kPyTorchJob, {{"MASTER_PORT", "65536"}}),
       "MASTER_PORT='65536' is not a port (1 to 65535)"},
      {With(kPyTorchJob, {{"MASTER_PORT", "http"}}),
       "MASTER_PORT='http' is not a port (1 to 65535)"},
      {With(kTorchrun, {{"TORCHELASTIC_RESTART_COUNT", "-1"}}),
       "TORCHELASTIC_RESTART_COUNT='-1' is not a non-negative integer"},
      {With(kTorchrun, {{"TORCHELASTIC_MAX_RESTARTS", "many"}}),
       "TORCHELASTIC_MAX_RESTARTS='many' is not a non-negative integer"},
      {With(kTorchrun, {{"TORCHELASTIC_USE_AGENT_STORE", "yes"}}),
       "TORCHELASTIC_USE_AGENT_STORE='yes' is not True or False"},
      {With(kTorchrun, {{"LOCKSTEP_RUN", "yes"}}),
       "LOCKSTEP_RUN='yes' is not 1 (lockstep-run sets it)"},
      {{{"OMPI_COMM_WORLD_SIZE", "four"}}, "OMPI_COMM_WORLD_SIZE='four' is not a positive integer"},
      {With(kSrun, {{"SLURM_PROCID", "4"}}),
       "SLURM_PROCID='4' is not below SLURM_STEP_NUM_TASKS='4'"},
      {With(kSrun, {{"SLURM_STEP_TASKS_PER_NODE", "2(x3)"}}),
       "SLURM_STEP_TASKS_PER_NODE='2(x3)' is not a layout of SLURM_STEP_NUM_TASKS='4' tasks"},
      {With(kSrun, {{"SLURM_STEP_TASKS_PER_NODE", "2(x)"}}),
       "SLURM_STEP_TASKS_PER_NODE='2(x)' is not Slurm's tasks per node such as 2(x3),1 ('2(x)' "
       "is not N or N(xM))"},
      {With(kSrun, {{"SLURM_NODEID", "2"}}),
       "SLURM_NODEID='2' is not below the 2 nodes of SLURM_STEP_TASKS_PER_NODE='2(x2)'"},
      {With(kSrun, {{"SLURM_LOCALID", "2"}}),
       "SLURM_LOCALID='2' is not below the 2 tasks that SLURM_STEP_TASKS_PER_NODE='2(x2)' places "
       "on SLURM_NODEID='1'"},
      {With(kSrun, {{"SLURM_STEP_NODELIST", "gpu[009-007]"}}),
       "SLURM_STEP_NODELIST='gpu[009-007]' is not a Slurm hostlist (the range 009-007 in "
       "[009-007] runs backwards)"},
      {With(kSrun, {{"SLURM_STEP_NODELIST", "gpu[007-009"}}),
       "SLURM_STEP_NODELIST='gpu[007-009' is not a Slurm hostlist (the '[' at 3 is not closed)"},
      {With(kSrun, {{"SLURM_JOB_ID", "job"}}), "SLURM_JOB_ID='job' is not a Slurm id"},
      {With(kSrun, {{"SLURM_STEP_RESV_PORTS", "none"}}),
       "SLURM_STEP_RESV_PORTS='none' is not a port range such as 12000-12003"},
      {With(kSrun, {{"SLURM_RESTART_COUNT", "x"}}),
       "SLURM_RESTART_COUNT='x' is not a non-negative integer"},
  };
  for (const auto& [env, message] : cases) ExpectRefused(env, message);
}

TEST(EnvOptionsTest, SlurmHostlistSyntax) {
  using Hosts = std::vector<std::string>;
  EXPECT_EQ(*ExpandHostlist("node[01-03,07],gpu5"),
            (Hosts{"node01", "node02", "node03", "node07", "gpu5"}));
  EXPECT_EQ(*ExpandHostlist("gpu[007-009],cpu1"), (Hosts{"gpu007", "gpu008", "gpu009", "cpu1"}));
  // A number is as wide as its range's first; names go on after a bracket; brackets multiply.
  EXPECT_EQ(*ExpandHostlist("n[8-10]"), (Hosts{"n8", "n9", "n10"}));
  EXPECT_EQ(*ExpandHostlist("n[098-100]-ib"), (Hosts{"n098-ib", "n099-ib", "n100-ib"}));
  EXPECT_EQ(*ExpandHostlist("r[1-2]n[3,5]"), (Hosts{"r1n3", "r1n5", "r2n3", "r2n5"}));
  EXPECT_EQ(*ExpandHostlist("a-b,c"), (Hosts{"a-b", "c"}));
  // The first host of a huge list without expanding it; the whole list is checked all the same.
  EXPECT_EQ(*ExpandHostlist("node[1-999999999],x", 1), Hosts{"node1"});
  for (const char* bad : {"", "a,", "a]", "a[1-2", "a[1-2[3]]", "a[]", "a[x]", "a[2-1]", "a[1-]",
                          "b,a[1,,2]", "a[1234567890123456789]"}) {
    EXPECT_FALSE(ExpandHostlist(bad, 1).ok()) << bad;
  }
  EXPECT_EQ(ParseTasksPerNode("2(x3),1")->size(), 2u);
  EXPECT_EQ((*ParseTasksPerNode("2(x3),1"))[0].nodes, 3);
  for (const char* bad : {"", "2(x0)", "2(x3", "x", "2,,1", "-1"}) {
    EXPECT_FALSE(ParseTasksPerNode(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace lockstep
