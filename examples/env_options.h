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
//   LOCKSTEP_DUMP_GRAPH            a directory: each graph as text before and after every pass
//   LOCKSTEP_CUDA_TF32             1: float32 convolutions and matmuls may use TF32 (default);
//                                  0: full float32
//   LOCKSTEP_DETERMINISTIC         1: runs repeat bit for bit (default); 0: cuDNN may choose
//                                  faster convolution algorithms whose sums vary run to run
//   OMPI_COMM_WORLD_SIZE, PMIX_RANK, PMI_RANK: set by mpirun (Open MPI) or a PMIx / PMI
//                                  launcher such as srun: parallel::Init starts MPI
//
//   absl::StatusOr<EnvOptions> env = ReadEnvOptions();
//   if (!env.ok()) return parallel::ReportFatal(env.status());
//   absl::StatusOr<parallel::Context> ctx = parallel::Init(&argc, &argv, env->init);

#include <functional>
#include <string>

#include "core/status.h"
#include "ops/math_options.h"
#include "parallel/context.h"

namespace lockstep {

struct EnvOptions {
  parallel::InitOptions init;  // whether to start MPI, and the communicators' options
  // For the data-parallel models: ParallelOptions::overlap_communication.
  bool overlap_communication = true;
  // For every graph the binary compiles: CompileOptions::dump_dir and, in its config, the math.
  std::string dump_dir;
  MathOptions math;
};

// From the process environment.
absl::StatusOr<EnvOptions> ReadEnvOptions();
// From `lookup`, which returns a variable's value or null when it is unset (tests use it).
absl::StatusOr<EnvOptions> ParseEnvOptions(
    const std::function<const char*(const char* name)>& lookup);

}  // namespace lockstep
