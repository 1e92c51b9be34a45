#pragma once

// Process bootstrap. Started by a launcher of the env:// contract (torchrun, a plain srun,
// lockstep-run; InitOptions::rendezvous), Init meets the other ranks at the master's key-value
// store (tcp_store.h) and builds the host communicator over gloo (gloo_communicator.h); the GPUs
// are assigned and NCCL started over it as under MPI. Under mpirun, Init starts MPI
// (MPI_Init_thread), learns the world rank and size and the local rank (MPI_Comm_split_type
// SHARED), picks each rank's GPU (gpu_assignment.h), and builds the world communicators: MPI for
// host memory and, in CUDA builds with a GPU, NCCL for device memory (rank 0's ncclGetUniqueId
// travels by MPI_Bcast). Otherwise the process is a world of one and MPI is not started at all.
// Whether mpirun started the process is the caller's to say: the binaries tell it from the
// launcher's environment, with the other settings they read there (examples/env_options.h).
//
//   int main(int argc, char** argv) {
//     absl::StatusOr<parallel::Context> ctx = parallel::Init(&argc, &argv, {.mpi = true});
//     if (!ctx.ok()) return parallel::ReportFatal(ctx.status());
//     ...
//     if (!status.ok()) return parallel::ReportFatal(status);  // "lockstep: [rank 3] error: ..."
//   }

#include <memory>
#include <optional>
#include <string>

#include "core/device.h"
#include "core/status.h"
#include "parallel/communicator.h"
#include "parallel/device_world.h"
#include "parallel/options.h"
#include "parallel/watchdog.h"

namespace lockstep::parallel {

class TcpStore;
class TcpStoreServer;

// How the ranks of a job started without MPI find each other: the env:// contract of torchrun
// (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT,
// TORCHELASTIC_RUN_ID, TORCHELASTIC_RESTART_COUNT), which Kubernetes' PyTorchJob, a plain srun
// (from SLURM_PROCID and the job's first host) and lockstep-run provide too.
struct Rendezvous {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;
  int node_rank = 0;  // GROUP_RANK
  std::string master_addr;
  int master_port = 0;
  // The launcher's agent serves the key-value store at the master (torchrun's
  // TORCHELASTIC_USE_AGENT_STORE, lockstep-run); otherwise rank 0 serves it there.
  bool agent_store = false;
  std::string run_id;     // separates jobs that share the master's address
  int restart_count = 0;  // how many times the launcher restarted the group
};

struct InitOptions {
  // The process was started by mpirun or another MPI launcher (srun --mpi): start MPI.
  bool mpi = false;
  // Started by a launcher of the env:// contract: the host collectives go over gloo.
  std::optional<Rendezvous> rendezvous;
  // Which launcher started the process ("mpirun", "torchrun", "srun", "lockstep-run"), for the
  // line that says so; empty for a world of one.
  std::string launcher;
  CommOptions comm;
};

// A handle to the parallel context: copies share it. Under MPI, MPI is finalized when the last
// copy goes (after the communicators), so keep one for as long as the program communicates; the
// communication groups (comm_group.h) hold one.
class Context {
 public:
  int rank() const { return state_->rank; }
  int size() const { return state_->size; }
  int local_rank() const { return state_->local_rank; }
  int local_size() const { return state_->local_size; }
  // The device this rank computes on: its GPU when every rank has one (parallel/gpu_assignment.h),
  // else the CPU.
  Device device() const { return state_->gpus.device; }
  // The device for a user's choice of "auto", "cpu" or "cuda": auto is device(), after one line
  // on rank 0 when GPUs were seen but not every rank has one; an error when the ranks' GPUs
  // could not be assigned (except for "cpu") or "cuda" finds no GPU.
  absl::StatusOr<Device> DeviceFor(absl::string_view choice) const;
  // True when Init started MPI (InitOptions::mpi; even with -n 1).
  bool launched_by_mpi() const { return state_->mpi_started; }
  const CommOptions& comm_options() const { return state_->comm_options; }

  // The world communicator for tensors on `device`: MPI for the CPU, NCCL for CUDA. The
  // communication groups (comm_group.h) run it through their own queues, with the timeout.
  absl::StatusOr<std::shared_ptr<Communicator>> World(Device device) const;
  // The host world for collectives of one's own, outside the graph: under MPI each one waits
  // with the collective timeout (TimedCommunicator), so a dead or stopped rank ends it with a
  // report instead of a hang.
  std::shared_ptr<Communicator> HostWorld() const { return state_->host_world; }
  // This rank's watchdog (watchdog.h), for the report of communicators and queues of one's own
  // after a timeout; null in a world of one.
  std::shared_ptr<const Watchdog> watchdog() const { return state_->watchdog; }

 private:
  friend class ContextBuilder;  // context_builder.h
  struct State {
    State() = default;
    State(const State&) = delete;
    State& operator=(const State&) = delete;
    ~State();  // drops the communicators, stops the watchdog; under MPI finalizes MPI
    int rank = 0;
    int size = 1;
    int local_rank = 0;
    int local_size = 1;
    CommOptions comm_options;
    bool mpi_started = false;
    bool finalize_mpi =
        false;  // set once MPI started fully; a failed start leaves it to ReportFatal
    // Without MPI (InitOptions::rendezvous): the store the ranks met at, and on the rank that
    // serves it (rank 0, unless the launcher's agent does), its server.
    std::unique_ptr<TcpStoreServer> store_server;
    std::unique_ptr<TcpStore> store;
    std::shared_ptr<Watchdog> watchdog;        // with more than one rank
    std::shared_ptr<Communicator> host_comm;   // MPI's (or a world of one's), untimed
    std::shared_ptr<Communicator> host_world;  // host_comm with the timeout (TimedCommunicator)
    DeviceWorld gpus;  // the GPU this rank computes on and NCCL over it, or why none
  };
  explicit Context(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

// Starts the parallel context. Under MPI it runs once per process (MPI cannot start twice); a
// world of one may be made any number of times. When starting MPI fails after MPI_Init, MPI is
// left running for ReportFatal to abort the job.
absl::StatusOr<Context> Init(int* argc, char*** argv, const InitOptions& options = {});

// For a binary's main after an unrecoverable error: prints "lockstep: [rank R] error: <message>"
// to stderr and, under MPI, calls MPI_Abort so that no rank is left waiting in a collective. An
// error every rank agreed on (parallel/agree.h) is printed once, by rank 0, and MPI is left to
// finalize normally as every rank returns. Returns the exit status for main to return (1).
int ReportFatal(const absl::Status& status);

}  // namespace lockstep::parallel
