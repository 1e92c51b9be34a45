#pragma once

// Process bootstrap. Under mpirun, Init starts MPI (MPI_Init_thread), learns the world rank and
// size and the local rank (MPI_Comm_split_type SHARED), picks CUDA device = local rank, and
// builds the world communicators: MPI for host memory and, in CUDA builds with a GPU, NCCL for
// device memory (rank 0's ncclGetUniqueId travels by MPI_Bcast). Started without mpirun, the
// process is a world of one and MPI is not started at all.
//
//   int main(int argc, char** argv) {
//     parallel::Context& ctx = parallel::Init(&argc, &argv);
//     ...
//     if (!status.ok()) parallel::Abort(status);   // prints "lockstep: [rank 3] error: ..."
//   }

#include <memory>

#include "core/device.h"
#include "core/status.h"
#include "parallel/communicator.h"

namespace lockstep::parallel {

class Context {
 public:
  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  // The device this rank computes on: CUDA(local_rank) when a GPU is present, else CPU.
  Device device() const { return device_; }
  // True when started by mpirun (even with -n 1).
  bool launched_by_mpi() const { return launched_by_mpi_; }

  // The world communicator for tensors on `device`: MPI for the CPU, NCCL for CUDA.
  absl::StatusOr<std::shared_ptr<Communicator>> World(Device device) const;
  std::shared_ptr<Communicator> HostWorld() const { return host_world_; }

 private:
  friend Context& Init(int* argc, char*** argv);
  friend class ContextBuilder;
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  int local_size_ = 1;
  Device device_ = Device::CPU();
  bool launched_by_mpi_ = false;
  std::shared_ptr<Communicator> host_world_;
  std::shared_ptr<Communicator> device_world_;  // null without a GPU
};

// Idempotent: the first call bootstraps, later ones return the same context. MPI is finalized
// at process exit. Failures to bootstrap are fatal (there is nothing to run without it).
Context& Init(int* argc, char*** argv);
// The context of an earlier Init, or a world of one when Init was never called.
Context& CurrentContext();

// Ends the whole job after an unrecoverable error: prints "lockstep: [rank R] error: <message>"
// to stderr and, under MPI, calls MPI_Abort so that no rank is left waiting in a collective.
// An error every rank agreed on (parallel/agree.h) is printed once, by rank 0, and each rank
// exits with status 1.
[[noreturn]] void Abort(const absl::Status& status);

}  // namespace lockstep::parallel
