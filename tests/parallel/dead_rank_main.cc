// A job in which rank 1 dies before an AllReduce that the other ranks enter. The job must end,
// not hang. Open MPI 4.1 ends it by itself: mpirun sees rank 1 exit non-zero, kills the others
// and exits with rank 1's code (3), printing
//   Primary job  terminated normally, but 1 process returned
//   a non-zero exit code. Per user-direction, the job has been aborted.
//   mpirun detected that one or more processes exited with non-zero status, thus causing
//   the job to be terminated. The first process to do so was: ... Exit code: 3
// Where the launcher does not (OMPI_MCA_orte_abort_on_non_zero_status=0, other launchers), the
// survivors, waiting on the AllReduce through a CollectiveQueue, give up after
// LOCKSTEP_COLLECTIVE_TIMEOUT_S, find rank 1 unresponsive (parallel/watchdog.h) and report:
// "lockstep: [rank 0] error: collective #1 AllReduce 'dead_rank/gradient' did not finish within
// 2 s: a rank died or took another path; where each rank is: ... rank 1: unresponsive ...",
// then MPI_Abort ends the job with exit code 1.

#include <cstdlib>

#include "examples/env_options.h"
#include "parallel/collective_queue.h"
#include "parallel/context.h"

namespace lockstep::parallel {
namespace {

int Run(int argc, char** argv) {
  absl::StatusOr<StartedRank> started = StartRank(&argc, &argv);
  if (!started.ok()) return ReportFatal(started.status());
  const Context& ctx = started->context;
  if (ctx.rank() == 1) std::_Exit(3);
  absl::StatusOr<std::shared_ptr<Communicator>> cpu_world = ctx.World(Device::CPU());
  if (!cpu_world.ok()) return ReportFatal(cpu_world.status());
  std::shared_ptr<Communicator> world = *cpu_world;  // queued below, as a group queues it
  Tensor gradient = Tensor::Zeros({1024}, DType::kF32);
  CollectiveQueue queue(ctx.watchdog());
  CollectiveHandle handle = queue.Submit(
      "AllReduce 'dead_rank/gradient'", [&] { return world->AllReduce(gradient, ReduceOp::kSum); });
  absl::Status status = handle.Wait(ctx.comm_options().collective_timeout);
  // Success is a failure too: the AllReduce cannot finish without rank 1.
  return ReportFatal(status.ok() ? absl::InternalError("the AllReduce finished without rank 1")
                                 : status);
}

}  // namespace
}  // namespace lockstep::parallel

int main(int argc, char** argv) { return lockstep::parallel::Run(argc, argv); }
