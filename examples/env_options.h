#pragma once

// What a Lockstep binary takes from its environment, read once at start-up (before
// parallel::Init) and handed to the libraries as options: nothing below examples/ and bench/
// reads an environment variable. A malformed value is an error naming the variable and the
// value; an empty one counts as unset.
//
//   LOCKSTEP_COLLECTIVE_TIMEOUT_S  seconds a rank waits for a collective (300)
//   LOCKSTEP_OVERLAP_COMM          1: the gradient AllReduce runs behind the backward (default);
//                                  0: where it stands, the compute thread waiting
//   LOCKSTEP_ALLREDUCE_SEGMENT_MB  MiB per MPI_Allreduce call of a larger AllReduce (2; 0: one
//                                  call); rank 0's holds for the job
//   NCCL_MULTI_RANK_GPU_ENABLE     1 on every rank: ranks may share GPUs (NCCL >= 2.30 reads
//                                  it too)
//   LOCKSTEP_DUMP_GRAPH            a directory: each graph as text before and after every pass
//   LOCKSTEP_CUDA_TF32             1: float32 convolutions and matmuls may use TF32 (default);
//                                  0: full float32
//   LOCKSTEP_DETERMINISTIC         1: runs repeat bit for bit (default); 0: cuDNN may choose
//                                  faster convolution algorithms whose sums vary run to run
//
// Which launcher started the process (examples/launch_env.h), into InitOptions' mpi, rendezvous
// and launcher. The first of these whose variables are set wins: a launcher run inside another's
// allocation inherits the outer one's variables.
//   1. MPI: OMPI_COMM_WORLD_SIZE, PMIX_RANK or PMI_RANK. parallel::Init starts MPI. Launcher
//      "srun" for srun --mpi=pmix|pmi2 (srun's step variables, below, and no
//      OMPI_COMM_WORLD_SIZE, which Open MPI's mpirun sets), else "mpirun". Where RANK,
//      WORLD_SIZE, LOCAL_RANK or LOCAL_WORLD_SIZE are set too, they must equal MPI's
//      (OMPI_COMM_WORLD_RANK or PMIX_RANK or PMI_RANK, OMPI_COMM_WORLD_SIZE or PMI_SIZE,
//      OMPI_COMM_WORLD_LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_SIZE): two launchers' ranks that
//      disagree are an error.
//   2. The env:// contract, when any of RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
//      GROUP_RANK, TORCHELASTIC_RUN_ID or LOCKSTEP_RUN is set (MASTER_ADDR and MASTER_PORT alone
//      are not enough: batch scripts export them for srun too). Launcher "lockstep-run" with
//      LOCKSTEP_RUN=1, "torchrun" with TORCHELASTIC_RUN_ID, else "env" (processes started by
//      hand, as Kubernetes' PyTorchJob does).
//        RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT  required; 0 <= RANK < WORLD_SIZE, port
//                                                    1 to 65535
//        LOCAL_RANK, LOCAL_WORLD_SIZE    both or neither; neither: local rank 0 of 1, one process
//                                        per host or pod (a PyTorchJob sets only the four above)
//        GROUP_RANK                      the host's index (RANK / LOCAL_WORLD_SIZE)
//        TORCHELASTIC_RUN_ID             the run id (none)
//        TORCHELASTIC_RESTART_COUNT      how often the group was restarted (0)
//        TORCHELASTIC_MAX_RESTARTS       how often it may be (0): EnvOptions::max_restarts
//        TORCHELASTIC_USE_AGENT_STORE    True: the launcher's agent serves the store at the
//                                        master (False; torchrun writes True, 1 and true do too)
//   3. A plain srun (no --mpi): SLURM_PROCID with the step's SLURM_STEP_NUM_TASKS (a batch
//      script has SLURM_PROCID=0 but no step variables: it is a world of one). Launcher "srun".
//        SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_LOCALID, SLURM_NODEID  rank, size, local rank,
//                                        node rank
//        SLURM_STEP_TASKS_PER_NODE (or SLURM_TASKS_PER_NODE)  "2(x3),1": local size from
//                                        SLURM_NODEID's entry; the entries must sum to the size
//        SLURM_STEP_NODELIST (or SLURM_JOB_NODELIST, SLURM_NODELIST)  the master is its first
//                                        host, where task 0 runs; MASTER_ADDR, if set, instead
//        MASTER_PORT, else the first of SLURM_STEP_RESV_PORTS (srun --resv-ports), else
//                                        29500 + SLURM_JOB_ID % 1000, below Linux's ephemeral
//                                        ports: jobs sharing a first host differ unless their
//                                        ids differ by a multiple of 1000
//        SLURM_JOB_ID, SLURM_STEP_ID     the run id "<job>.<step>"
//        SLURM_RESTART_COUNT             how often Slurm requeued the job (0)
//      SLURM_NTASKS_PER_NODE is not read: it is the job's request, which a step may not follow.
//   Else a world of one. An incomplete set is an error naming what is set and what is missing.
//
//   absl::StatusOr<StartedRank> started = StartRank(&argc, &argv);
//   if (!started.ok()) return parallel::ReportFatal(started.status());
//   const parallel::Context& ctx = started->context;

#include <functional>
#include <string>

#include "core/status.h"
#include "ops/math_options.h"
#include "parallel/context.h"

namespace lockstep {

struct EnvOptions {
  // Which launcher started the process (MPI, a rendezvous or a world of one), and the
  // communicators' options.
  parallel::InitOptions init;
  // For the data-parallel models: ParallelOptions::overlap_communication.
  bool overlap_communication = true;
  // For every graph the binary compiles: CompileOptions::dump_dir and, in its config, the math.
  std::string dump_dir;
  MathOptions math;
  // How often the launcher may restart the group (TORCHELASTIC_MAX_RESTARTS; 0: never or
  // unknown). With init.rendezvous->restart_count, lockstep-train tells a restart from a first
  // start, and a job that will be restarted from one that will not: it needs checkpoints to
  // resume from.
  int max_restarts = 0;
};

// From the process environment.
absl::StatusOr<EnvOptions> ReadEnvOptions();
// From `lookup`, which returns a variable's value or null when it is unset (tests use it).
absl::StatusOr<EnvOptions> ParseEnvOptions(
    const std::function<const char*(const char* name)>& lookup);

// What a binary starts with: the environment's options, and this rank's context, started with
// them (parallel::Init).
struct StartedRank {
  EnvOptions env;
  parallel::Context context;
};
// Every binary's first call: ReadEnvOptions, then parallel::Init. Its error goes to
// parallel::ReportFatal, as every later one does.
absl::StatusOr<StartedRank> StartRank(int* argc, char*** argv);

}  // namespace lockstep
