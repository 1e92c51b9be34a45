#include "parallel/context.h"

#include <mpi.h>

#include <iostream>
#include <string>
#include <vector>

#include "core/host_name.h"
#include "core/logging.h"
#include "parallel/agree.h"
#include "parallel/gpu_assignment.h"
#include "parallel/mpi_communicator.h"
#include "parallel/rendezvous.h"
#include "parallel/timed_communicator.h"
#include "parallel/watchdog.h"
#ifdef LOCKSTEP_WITH_CUDA
#include "ops/cuda/cuda_status.h"
#include "parallel/nccl_communicator.h"
#endif

namespace lockstep::parallel {

// Fills a Context's state; the only code besides Context that touches it.
class ContextBuilder {
 public:
  using State = Context::State;
  // This process alone; MPI untouched.
  static Context WorldOfOne(const CommOptions& options);
  // Under mpirun: starts MPI and builds the world communicators.
  static absl::StatusOr<Context> StartMpi(int* argc, char*** argv, const CommOptions& options);
  // Started by a launcher of the env:// contract: meets the other ranks at the store, gloo for
  // the host.
  static absl::StatusOr<Context> StartRendezvous(const InitOptions& options);

 private:
  static absl::Status Start(int* argc, char*** argv, State* state);
  static absl::Status StartDeviceWorld(State* state);
};

namespace {

#ifdef LOCKSTEP_WITH_CUDA
constexpr bool kCudaBuild = true;
#else
constexpr bool kCudaBuild = false;
#endif

#ifdef LOCKSTEP_WITH_CUDA
// The UUIDs of the devices this process sees, as nvidia-smi -L prints them; none without a
// driver.
std::vector<std::string> VisibleGpus() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) return {};
  std::vector<std::string> uuids;
  for (int device = 0; device < count; ++device) {
    cudaDeviceProp properties;
    if (cudaGetDeviceProperties(&properties, device) != cudaSuccess) return {};
    std::string uuid = "GPU-";
    for (int i = 0; i < 16; ++i) {
      if (i == 4 || i == 6 || i == 8 || i == 10) uuid += '-';
      absl::StrAppend(&uuid,
                      absl::Hex(static_cast<uint8_t>(properties.uuid.bytes[i]), absl::kZeroPad2));
    }
    uuids.push_back(std::move(uuid));
  }
  return uuids;
}

#endif

}  // namespace

Context::State::~State() {
  StopWatchdog();
  if (!mpi_started) return;
  // The communicators free their MPI and NCCL resources, which must go before MPI_Finalize.
  device_world.reset();
  host_world.reset();
  host_comm.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalize_mpi && !finalized) MPI_Finalize();
}

Context ContextBuilder::WorldOfOne(const CommOptions& options) {
  auto state = std::make_shared<State>();
  state->comm_options = options;
  state->host_comm = MakeSelfCommunicator(Device::CPU());
  state->host_world = state->host_comm;  // a world of one never waits
#ifdef LOCKSTEP_WITH_CUDA
  // NCCL with one rank, so a world of one runs the same collective kernels as many ranks.
  if (CudaAvailable()) {
    absl::StatusOr<std::shared_ptr<NcclCommunicator>> nccl =
        NcclCommunicator::Create(*state->host_world, 0, options.collective_timeout);
    if (nccl.ok()) {
      state->device = Device::CUDA(0);
      state->device_world = *nccl;
    } else {
      LS_LOG(Warning) << "no NCCL world of one on cuda:0, computing on the CPU: "
                      << nccl.status().message();
    }
  }
#endif
  return Context(std::move(state));
}

absl::StatusOr<Context> ContextBuilder::StartMpi(int* argc, char*** argv,
                                                 const CommOptions& options) {
  int initialized = 0;
  MPI_RETURN_IF_ERROR(MPI_Initialized(&initialized));
  if (initialized) {
    return absl::FailedPreconditionError(
        "MPI was started before: parallel::Init starts it once per process; pass its Context on");
  }
  auto state = std::make_shared<State>();
  state->comm_options = options;
  LS_RETURN_IF_ERROR(Start(argc, argv, state.get()));
  state->finalize_mpi = true;
  return Context(std::move(state));
}

absl::Status ContextBuilder::Start(int* argc, char*** argv, State* state) {
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
  state->host_world =
      std::make_shared<TimedCommunicator>(state->host_comm, state->comm_options.collective_timeout);
  LS_RETURN_IF_ERROR(StartWatchdog());
  return StartDeviceWorld(state);
}

absl::StatusOr<Context> ContextBuilder::StartRendezvous(const InitOptions& options) {
  const Rendezvous& rendezvous = *options.rendezvous;
  auto state = std::make_shared<State>();
  state->comm_options = options.comm;
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
  LS_RETURN_IF_ERROR(StartStoreWatchdog(rendezvous.master_addr, rendezvous.master_port,
                                        meeting.prefix, state->rank, state->size, timeout));
  state->host_world = std::make_shared<TimedCommunicator>(state->host_comm, timeout);
  if (state->rank == 0) {
    LS_LOG(Info) << "started by " << options.launcher << ": " << state->size << " ranks, "
                 << "master " << rendezvous.master_addr << ":" << rendezvous.master_port
                 << ", run '" << rendezvous.run_id << "', restart " << rendezvous.restart_count
                 << "; host collectives over gloo";
  }
  LS_RETURN_IF_ERROR(StartDeviceWorld(state.get()));
  return Context(std::move(state));
}

absl::Status ContextBuilder::StartDeviceWorld([[maybe_unused]] State* state) {
#ifdef LOCKSTEP_WITH_CUDA
  const RankGpuView mine{.rank = state->rank,
                         .host = HostName(),
                         .local_rank = state->local_rank,
                         .local_size = state->local_size,
                         .gpus = VisibleGpus(),
                         .may_share_gpu = state->comm_options.ranks_may_share_gpu};
  LS_ASSIGN_OR_RETURN(std::vector<std::string> texts,
                      GatherStrings(EncodeGpuView(mine), *state->host_world));
  std::vector<RankGpuView> views;
  for (const std::string& text : texts) {
    LS_ASSIGN_OR_RETURN(RankGpuView view, DecodeGpuView(text));
    views.push_back(std::move(view));
  }
  // Every rank decides alike from the same views: all start NCCL, or none does.
  absl::StatusOr<GpuAssignment> assignment = AssignGpus(views);
  if (!assignment.ok()) {
    state->gpu_error = assignment.status();
    return absl::OkStatus();
  }
  state->cpu_reason = assignment->cpu_reason;
  if (assignment->device.empty()) return absl::OkStatus();
  const int index = assignment->device[state->rank];
  state->device = Device::CUDA(index);
  CUDA_RETURN_IF_ERROR(cudaSetDevice(index));
  LS_ASSIGN_OR_RETURN(
      state->device_world,
      NcclCommunicator::Create(*state->host_world, index, state->comm_options.collective_timeout));
#endif
  return absl::OkStatus();
}

absl::StatusOr<Device> Context::DeviceFor(absl::string_view choice) const {
  if (choice == "cpu") return Device::CPU();
  if (choice != "auto" && choice != "cuda") {
    return absl::InvalidArgumentError(
        absl::StrCat("no device '", choice, "': expected auto, cpu or cuda"));
  }
  if (!state_->gpu_error.ok()) return state_->gpu_error;
  if (choice == "cuda" && state_->device.type != DeviceType::kCUDA) {
    const std::string why = !state_->cpu_reason.empty() ? state_->cpu_reason
                            : kCudaBuild                ? "no rank sees a GPU"
                                                        : "this build has no CUDA support";
    return absl::FailedPreconditionError(
        absl::StrCat("--device cuda, but rank ", rank(), " has no GPU: ", why));
  }
  if (!state_->cpu_reason.empty() && rank() == 0) LS_LOG(Warning) << state_->cpu_reason;
  return state_->device;
}

absl::StatusOr<std::shared_ptr<Communicator>> Context::World(Device device) const {
  if (device.type == DeviceType::kCPU) return state_->host_comm;
  const std::shared_ptr<Communicator>& device_world = state_->device_world;
  if (device_world != nullptr && device_world->device() == device) return device_world;
  const std::string why = !kCudaBuild                   ? "this build has no CUDA support"
                          : !state_->gpu_error.ok()     ? std::string(state_->gpu_error.message())
                          : !state_->cpu_reason.empty() ? state_->cpu_reason
                          : device_world == nullptr     ? "no GPU for this rank (none found)"
                                                    : "tensors must live on this rank's own GPU";
  return absl::FailedPreconditionError(absl::StrCat("no communicator for ", device.ToString(),
                                                    " on rank ", rank(), " (which computes on ",
                                                    state_->device.ToString(), "): ", why));
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
