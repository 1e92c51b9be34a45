#include "parallel/context.h"

#include <mpi.h>

#include <iostream>
#include <string>

#include "core/logging.h"
#include "parallel/agree.h"
#include "parallel/context_builder.h"
#include "parallel/rendezvous.h"
#include "parallel/timed_communicator.h"
#include "parallel/watchdog.h"

namespace lockstep::parallel {

Context::State::~State() {
  // The communicators free their MPI and NCCL resources, which must go before MPI_Finalize, as
  // must the watchdog's (stopped, in case a communicator somebody kept still holds it).
  gpus.world.reset();
  host_world.reset();
  host_comm.reset();
  if (watchdog != nullptr) watchdog->Stop();
  if (!mpi_started) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalize_mpi && !finalized) MPI_Finalize();
}

std::shared_ptr<Context::State> ContextBuilder::NewState(const CommOptions& options) {
  auto state = std::make_shared<State>();
  state->comm_options = options;
  return state;
}

Context ContextBuilder::WorldOfOne(const CommOptions& options) {
  std::shared_ptr<State> state = NewState(options);
  state->host_comm = MakeSelfCommunicator(Device::CPU());
  state->host_world = state->host_comm;  // a world of one never waits
  state->gpus = DeviceWorldOfOne(*state->host_world, options);
  return Context(std::move(state));
}

absl::StatusOr<Context> ContextBuilder::StartRendezvous(const InitOptions& options) {
  const Rendezvous& rendezvous = *options.rendezvous;
  std::shared_ptr<State> state = NewState(options.comm);
  state->rank = rendezvous.rank;
  state->size = rendezvous.size;
  state->local_rank = rendezvous.local_rank;
  state->local_size = rendezvous.local_size;
  SetLogRank(state->rank);
  const std::chrono::milliseconds timeout = options.comm.collective_timeout;
  LS_ASSIGN_OR_RETURN(Meeting meeting, MeetTheOtherRanks(rendezvous, timeout));
  state->store_server = std::move(meeting.server);
  state->store = std::move(meeting.store);
  state->host_comm = std::move(meeting.host);
  LS_ASSIGN_OR_RETURN(state->watchdog,
                      Watchdog::OverStore(rendezvous.master_addr, rendezvous.master_port,
                                          meeting.prefix, state->rank, state->size, timeout));
  state->host_world =
      std::make_shared<TimedCommunicator>(state->host_comm, timeout, state->watchdog);
  if (state->rank == 0) {
    LS_LOG(Info) << "started by " << options.launcher << ": " << state->size << " ranks, "
                 << "master " << rendezvous.master_addr << ":" << rendezvous.master_port
                 << ", run '" << rendezvous.run_id << "', restart " << rendezvous.restart_count
                 << "; host collectives over gloo";
  }
  LS_RETURN_IF_ERROR(StartDeviceWorld(state.get()));
  return Context(std::move(state));
}

absl::Status ContextBuilder::StartDeviceWorld(State* state) {
  const RankPlace place{
      .rank = state->rank, .local_rank = state->local_rank, .local_size = state->local_size};
  LS_ASSIGN_OR_RETURN(
      state->gpus,
      parallel::StartDeviceWorld(place, *state->host_world, state->comm_options, state->watchdog));
  return absl::OkStatus();
}

absl::StatusOr<Device> Context::DeviceFor(absl::string_view choice) const {
  if (choice == "cpu") return Device::CPU();
  if (choice != "auto" && choice != "cuda") {
    return absl::InvalidArgumentError(
        absl::StrCat("no device '", choice, "': expected auto, cpu or cuda"));
  }
  const DeviceWorld& gpus = state_->gpus;
  if (!gpus.gpu_error.ok()) return gpus.gpu_error;
  if (choice == "cuda" && gpus.device.type != DeviceType::kCUDA) {
    const std::string why = !gpus.cpu_reason.empty() ? gpus.cpu_reason
                            : BuiltWithCuda()        ? "no rank sees a GPU"
                                                     : "this build has no CUDA support";
    return absl::FailedPreconditionError(
        absl::StrCat("--device cuda, but rank ", rank(), " has no GPU: ", why));
  }
  if (!gpus.cpu_reason.empty() && rank() == 0) LS_LOG(Warning) << gpus.cpu_reason;
  return gpus.device;
}

absl::StatusOr<std::shared_ptr<Communicator>> Context::World(Device device) const {
  if (device.type == DeviceType::kCPU) return state_->host_comm;
  const DeviceWorld& gpus = state_->gpus;
  if (gpus.world != nullptr && gpus.world->device() == device) return gpus.world;
  const std::string why = !BuiltWithCuda()           ? "this build has no CUDA support"
                          : !gpus.gpu_error.ok()     ? std::string(gpus.gpu_error.message())
                          : !gpus.cpu_reason.empty() ? gpus.cpu_reason
                          : gpus.world == nullptr    ? "no GPU for this rank (none found)"
                                                     : "tensors must live on this rank's own GPU";
  return absl::FailedPreconditionError(absl::StrCat("no communicator for ", device.ToString(),
                                                    " on rank ", rank(), " (which computes on ",
                                                    gpus.device.ToString(), "): ", why));
}

absl::StatusOr<Context> Init(int* argc, char*** argv, const InitOptions& options) {
  // A rendezvous of one (srun -n 1) needs no store and no port.
  if (options.rendezvous.has_value() && options.rendezvous->size > 1 && !options.mpi) {
    absl::StatusOr<Context> context = ContextBuilder::StartRendezvous(options);
    if (!context.ok()) return Annotate(context.status(), "starting the parallel context");
    return context;
  }
  if (!options.mpi) return ContextBuilder::WorldOfOne(options.comm);
  absl::StatusOr<Context> context = ContextBuilder::StartMpi(argc, argv, options.comm);
  if (!context.ok()) return Annotate(context.status(), "starting the parallel context");
  return context;
}

int ReportFatal(const absl::Status& status) {
  if (IsAgreedError(status)) {
    // Every rank holds it and ends alike: rank 0 speaks for all, and MPI is finalized as the
    // ranks return rather than aborted, so Open MPI adds no messages of its own.
    if (LogRank() <= 0) std::cerr << "lockstep: error: " << status.message() << std::endl;
    return 1;
  }
  LS_LOG(Error) << status.message();
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, 1);
  return 1;
}

}  // namespace lockstep::parallel
