#pragma once

// Collectives over host memory with MPI. One of the two places MPI appears (with the bootstrap
// in context.cc); everything else talks to Communicator.

#include <mpi.h>

#include <array>
#include <cstdint>
#include <limits>
#include <memory>

#include "parallel/communicator.h"
#include "parallel/options.h"

namespace lockstep::parallel {

class MpiCommunicator : public Communicator {
 public:
  // Elements one MPI call carries at most: MPI counts are int. Larger tensors go in chunks.
  static constexpr int64_t kMaxCount = std::numeric_limits<int>::max();
  // The reductions of bf16 and f16 (sum, max, min each), which MPI has none of: user-defined
  // operations that combine in float32, made with the communicator.
  using HalfOps = std::array<MPI_Op, 6>;

  // Works on a duplicate of `comm`, so that its messages never match the caller's, with
  // MPI_ERRORS_RETURN so that MPI errors come back as Status instead of ending the process.
  // `max_count` lowers the chunk size (tests use it to cover the chunked paths). AllReduces go
  // in segments of rank 0's `segment_bytes` (CommOptions::allreduce_segment_bytes): every rank
  // must cut them into the same calls.
  static absl::StatusOr<std::shared_ptr<MpiCommunicator>> Create(
      MPI_Comm comm, int64_t max_count = kMaxCount,
      size_t segment_bytes = CommOptions().allreduce_segment_bytes);
  ~MpiCommunicator() override;  // frees the duplicate (or MPI_Finalize did)
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Device device() const override { return Device::CPU(); }
  const char* backend() const override { return "mpi"; }
  MPI_Comm comm() const { return comm_; }
  size_t segment_bytes() const { return segment_bytes_; }
  // Every rank must set the same value before its next AllReduce.
  void set_segment_bytes(size_t bytes) { segment_bytes_ = bytes; }

  absl::Status AllReduce(const Tensor& inout, ReduceOp op) override;
  absl::Status AllGather(const Tensor& input, const Tensor& output) override;
  absl::Status Broadcast(const Tensor& inout, int root) override;
  absl::Status ReduceScatter(const Tensor& input, const Tensor& output, ReduceOp op) override;
  absl::Status Barrier() override;

 private:
  MpiCommunicator(MPI_Comm comm, int rank, int size, int64_t max_count)
      : comm_(comm), rank_(rank), size_(size), max_count_(max_count) {}
  // Broadcasts `count` elements at `data` from `root` in chunks of at most max_count_.
  absl::Status BroadcastChunks(char* data, int64_t count, DType dtype, int root);
  // Blocks of at most max_count_ elements: one MPI call.
  absl::Status AllGatherOnce(const Tensor& input, const Tensor& output);
  absl::Status ReduceScatterOnce(const Tensor& input, const Tensor& output, ReduceOp op);
  MPI_Op OpFor(ReduceOp op, DType dtype) const;
  // Larger blocks: one chunked collective per rank's block.
  absl::Status AllGatherByBroadcast(const Tensor& input, const Tensor& output);
  absl::Status ReduceScatterByReduce(const Tensor& input, const Tensor& output, ReduceOp op);
  // The delete function of the MPI_COMM_SELF attribute: frees comm_ and half_ops_.
  static int FreeHandles(MPI_Comm self, int keyval, void* communicator, void* extra);

  MPI_Comm comm_;
  int finalize_keyval_ = MPI_KEYVAL_INVALID;  // of the MPI_COMM_SELF attribute: FreeHandles
  HalfOps half_ops_ = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL,
                       MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};
  int rank_;
  int size_;
  int64_t max_count_;
  size_t segment_bytes_ = 0;
};

// An MPI error code as a Status naming the call, where it was made and MPI's error string.
absl::Status MpiErrorStatus(int error, const char* call, const char* file, int line);

}  // namespace lockstep::parallel

#define MPI_RETURN_IF_ERROR(expr)                                                            \
  do {                                                                                       \
    int ls_mpi_error_ = (expr);                                                              \
    if (ls_mpi_error_ != MPI_SUCCESS) {                                                      \
      return ::lockstep::parallel::MpiErrorStatus(ls_mpi_error_, #expr, __FILE__, __LINE__); \
    }                                                                                        \
  } while (0)
