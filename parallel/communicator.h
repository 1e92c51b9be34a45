#pragma once

// Collective communication between the ranks of a job. Everything above the bootstrap talks to
// a Communicator, never to MPI or NCCL directly: MpiCommunicator moves host memory,
// NcclCommunicator (CUDA builds) device memory.
//
// Every rank must call the same collectives in the same order with the same shapes, as with MPI
// itself. Calls are blocking; overlap with computation comes from CollectiveQueue, which runs
// them on a thread of their own.

#include <memory>
#include <string>

#include "core/device.h"
#include "core/status.h"
#include "core/tensor.h"

namespace lockstep::parallel {

enum class ReduceOp { kSum, kMax, kMin, kAvg };
const char* ReduceOpName(ReduceOp op);
// "sum", "max", "min", "avg" (as graph attributes spell them).
absl::StatusOr<ReduceOp> ParseReduceOp(absl::string_view name);

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Where the tensors passed to it must live.
  virtual Device device() const = 0;
  // "mpi" or "nccl".
  virtual const char* backend() const = 0;

  // In place over all ranks; kAvg is the sum divided by size().
  virtual absl::Status AllReduce(const Tensor& inout, ReduceOp op) = 0;
  // `output` holds size() blocks of input's bytes, rank i's in block i.
  virtual absl::Status AllGather(const Tensor& input, const Tensor& output) = 0;
  // Root's contents to every rank, in place.
  virtual absl::Status Broadcast(const Tensor& inout, int root) = 0;
  // `input` holds size() blocks of output's bytes; rank i receives the reduction of block i.
  virtual absl::Status ReduceScatter(const Tensor& input, const Tensor& output, ReduceOp op) = 0;
  virtual absl::Status Barrier() = 0;
};

// A world of one process (no mpirun): every collective is the identity.
std::shared_ptr<Communicator> MakeSelfCommunicator(Device device = Device::CPU());

}  // namespace lockstep::parallel
