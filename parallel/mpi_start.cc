// The Context's start under mpirun (context_builder.h).

#include <mpi.h>

#include "core/logging.h"
#include "parallel/context_builder.h"
#include "parallel/mpi_communicator.h"
#include "parallel/timed_communicator.h"
#include "parallel/watchdog.h"

namespace lockstep::parallel {

absl::StatusOr<Context> ContextBuilder::StartMpi(int* argc, char*** argv,
                                                 const CommOptions& options) {
  int initialized = 0;
  MPI_RETURN_IF_ERROR(MPI_Initialized(&initialized));
  if (initialized) {
    return absl::FailedPreconditionError(
        "MPI was started before: parallel::Init starts it once per process; pass its Context on");
  }
  std::shared_ptr<State> state = NewState(options);
  LS_RETURN_IF_ERROR(StartMpiWorld(argc, argv, state.get()));
  state->finalize_mpi = true;
  return Context(std::move(state));
}

absl::Status ContextBuilder::StartMpiWorld(int* argc, char*** argv, State* state) {
  int provided = 0;
  MPI_RETURN_IF_ERROR(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
  state->mpi_started = true;
  if (provided < MPI_THREAD_SERIALIZED) {
    return absl::FailedPreconditionError(
        absl::StrCat("the MPI library provides thread level ", provided,
                     ", below MPI_THREAD_SERIALIZED: collectives run on a thread of their own"));
  }
  MPI_RETURN_IF_ERROR(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  MPI_RETURN_IF_ERROR(MPI_Comm_rank(MPI_COMM_WORLD, &state->rank));
  MPI_RETURN_IF_ERROR(MPI_Comm_size(MPI_COMM_WORLD, &state->size));
  SetLogRank(state->rank);
  MPI_Comm local;
  MPI_RETURN_IF_ERROR(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, state->rank,
                                          MPI_INFO_NULL, &local));
  MPI_RETURN_IF_ERROR(MPI_Comm_rank(local, &state->local_rank));
  MPI_RETURN_IF_ERROR(MPI_Comm_size(local, &state->local_size));
  MPI_RETURN_IF_ERROR(MPI_Comm_free(&local));
  LS_ASSIGN_OR_RETURN(state->host_comm,
                      MpiCommunicator::Create(MPI_COMM_WORLD, MpiCommunicator::kMaxCount,
                                              state->comm_options.allreduce_segment_bytes));
  LS_ASSIGN_OR_RETURN(state->watchdog, Watchdog::OverMpi());
  state->host_world = std::make_shared<TimedCommunicator>(
      state->host_comm, state->comm_options.collective_timeout, state->watchdog);
  return StartDeviceWorld(state);
}

}  // namespace lockstep::parallel
