#pragma once

// How a Context's state is filled, for each way a process starts (context.h): the only code
// besides Context that touches it. Under mpirun in mpi_start.cc, the rest in context.cc.

#include <memory>

#include "parallel/context.h"

namespace lockstep::parallel {

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
  // Made where the store's types are complete (context.cc).
  static std::shared_ptr<State> NewState(const CommOptions& options);
  static absl::Status StartMpiWorld(int* argc, char*** argv, State* state);
  // After the host world: the GPUs (device_world.h).
  static absl::Status StartDeviceWorld(State* state);
};

}  // namespace lockstep::parallel
