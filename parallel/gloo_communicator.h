#pragma once

// Collectives over host memory without MPI, on gloo (Debian's libgloo-dev, the engine behind
// PyTorch's CPU data parallel): the host communicator of jobs started by torchrun, a plain srun
// or lockstep-run (parallel::Init with InitOptions::rendezvous). The ranks find each other
// through the rendezvous store (tcp_store.h): each publishes its TCP address under the job's
// prefix and gloo connects every pair.
//
// Calls are blocking and serialized (one gloo operation at a time, as the tags stay fixed), and
// each is bounded by the collective timeout: a peer that died fails it as soon as its connection
// closes, one that stopped fails it at the timeout.

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "parallel/communicator.h"
#include "parallel/tcp_store.h"

namespace gloo {
class Context;
}

namespace lockstep::parallel {

class GlooCommunicator : public Communicator {
 public:
  // Collective over `size` ranks: every rank calls it with the same `prefix` (the job's run id
  // and restart count, so a restarted group never meets the keys of the one before), and binds
  // its end of every connection on `address` (the address of this host that its peers reach).
  static absl::StatusOr<std::shared_ptr<GlooCommunicator>> Create(
      int rank, int size, TcpStore& store, const std::string& prefix, const std::string& address,
      std::chrono::milliseconds timeout);
  ~GlooCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Device device() const override { return Device::CPU(); }
  const char* backend() const override { return "gloo"; }

  absl::Status AllReduce(const Tensor& inout, ReduceOp op) override;
  absl::Status AllGather(const Tensor& input, const Tensor& output) override;
  absl::Status Broadcast(const Tensor& inout, int root) override;
  // gloo has no reduce-scatter of this form: an AllReduce of a copy, then this rank's block.
  absl::Status ReduceScatter(const Tensor& input, const Tensor& output, ReduceOp op) override;
  absl::Status Barrier() override;

 private:
  GlooCommunicator(int rank, int size, std::shared_ptr<gloo::Context> context);
  // Runs `collective` under the mutex, turning gloo's exceptions into a status naming it.
  absl::Status Run(absl::string_view collective, size_t bytes,
                   const std::function<void()>& collective_call);

  int rank_;
  int size_;
  std::shared_ptr<gloo::Context> context_;
  std::mutex mutex_;
};

}  // namespace lockstep::parallel
