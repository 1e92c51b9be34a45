#pragma once

// Collectives over device memory with NCCL (CUDA builds only). The Communicator calls are
// blocking, as that interface says: each waits for the work queued on the device's compute
// stream, enqueues on the communicator's own stream and waits for it. Kernels use
// EnqueueAllReduce instead, which keeps the host out of it.

#include <cuda_runtime.h>
#include <nccl.h>

#include <functional>
#include <memory>
#include <vector>

#include "parallel/communicator.h"

namespace lockstep::parallel {

class NcclCommunicator : public Communicator {
 public:
  // Collective over the ranks of `bootstrap` (a host communicator): rank 0 makes the NCCL
  // unique id, bootstrap.Broadcast hands it to the others, and every rank joins with CUDA
  // device `device_index`.
  static absl::StatusOr<std::shared_ptr<NcclCommunicator>> Create(Communicator& bootstrap,
                                                                  int device_index);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Device device() const override { return device_; }
  const char* backend() const override { return "nccl"; }

  absl::Status AllReduce(const Tensor& inout, ReduceOp op) override;
  absl::Status AllGather(const Tensor& input, const Tensor& output) override;
  absl::Status Broadcast(const Tensor& inout, int root) override;
  absl::Status ReduceScatter(const Tensor& input, const Tensor& output, ReduceOp op) override;
  absl::Status Barrier() override;

  // Work queued on this communicator's stream.
  using StreamWork = std::function<absl::Status(cudaStream_t)>;
  // Stream-ordered, for kernels: reduces `inouts` in place on this communicator's stream once
  // the work queued on `after` so far is done, and records `done` there; returns without
  // waiting. Readers make their stream wait on `done`. `before` and `after_reduce`, when set,
  // are queued right before and after the reduction (a narrower wire dtype's conversions).
  absl::Status EnqueueAllReduce(const std::vector<Tensor>& inouts, ReduceOp op, cudaStream_t after,
                                cudaEvent_t done, const StreamWork& before = nullptr,
                                const StreamWork& after_reduce = nullptr);

 private:
  NcclCommunicator(int rank, int size, Device device) : rank_(rank), size_(size), device_(device) {}
  // Runs `launch`, which enqueues NCCL calls on stream_, on this communicator's device and
  // waits for the stream; errors name the collective and its bytes.
  absl::Status Run(absl::string_view collective, size_t bytes,
                   const std::function<absl::Status()>& launch);
  absl::Status LaunchAndWait(const std::function<absl::Status()>& launch);

  int rank_;
  int size_;
  Device device_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_ = nullptr;  // recorded on the stream this communicator's work follows
  Tensor barrier_;               // (1) i32 on device_: Barrier is an AllReduce of it
};

// An NCCL result as a Status naming the call, where it was made and NCCL's explanation.
absl::Status NcclErrorStatus(ncclResult_t result, const char* call, const char* file, int line);

}  // namespace lockstep::parallel

#define NCCL_RETURN_IF_ERROR(expr)                                                              \
  do {                                                                                          \
    ncclResult_t ls_nccl_result_ = (expr);                                                      \
    if (ls_nccl_result_ != ncclSuccess) {                                                       \
      return ::lockstep::parallel::NcclErrorStatus(ls_nccl_result_, #expr, __FILE__, __LINE__); \
    }                                                                                           \
  } while (0)
