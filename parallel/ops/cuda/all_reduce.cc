// The AllReduce kernel for device memory, on NCCL, stream-ordered: the compute stream's work
// so far (the bucket's last gradient) is marked by an event that the communicator's stream
// waits on; the bucket is reduced there while the compute stream goes on with the backward,
// and the executor's Wait, before the bucket's first reader (its optimizer update), makes the
// compute stream wait on the reduction's event. The host never blocks inside a step.

#include <algorithm>

#include "core/backend.h"
#include "graph/kernel.h"
#include "ops/cuda/cuda_status.h"
#include "parallel/comm_group.h"
#include "parallel/nccl_communicator.h"
#include "parallel/ops/bucket_span.h"
#include "parallel/ops/cuda/nccl_kernel.h"

namespace lockstep::parallel {
namespace {

class NcclAllReduceKernel : public Kernel {
 public:
  NcclAllReduceKernel(const Node& node, size_t alignment, const NcclKernelParts& parts, ReduceOp op,
                      bool overlap)
      : communicator_(parts.communicator),
        op_(op),
        span_(ContiguousSpan(node, alignment)),
        done_(parts.done) {
    // Arena memory may be rewritten by the next node on the compute stream, so only persistent
    // buffers are reduced behind it.
    asynchronous_ =
        overlap && std::none_of(node.inputs.begin(), node.inputs.end(),
                                [](const Value* v) { return v->alloc.region == Region::kArena; });
  }
  ~NcclAllReduceKernel() override { cudaEventDestroy(done_); }

  bool asynchronous() const override { return asynchronous_; }
  bool communicates() const override { return true; }

  absl::Status Run(const KernelIO& io) override {
    if (tensors_.empty()) tensors_ = BucketTensors(span_, io.outputs);
    compute_ = static_cast<cudaStream_t>(io.stream);
    LS_RETURN_IF_ERROR(communicator_->EnqueueAllReduce(tensors_, op_, compute_, done_));
    return asynchronous_ ? absl::OkStatus() : Wait();
  }

  // Orders the compute stream after the reduction; the host goes on at once.
  absl::Status Wait() override {
    CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(compute_, done_, 0));
    return absl::OkStatus();
  }

 private:
  NcclCommunicator* communicator_;
  ReduceOp op_;
  Span span_;
  cudaEvent_t done_;
  bool asynchronous_ = false;
  cudaStream_t compute_ = nullptr;
  std::vector<Tensor> tensors_;
};

absl::StatusOr<std::unique_ptr<Kernel>> CreateNcclAllReduce(const Node& node,
                                                            const KernelContext& ctx) {
  LS_ASSIGN_OR_RETURN(ReduceOp op, ParseReduceOp(node.attrs.GetString("op")));
  LS_ASSIGN_OR_RETURN(NcclKernelParts parts, NcclPartsFor(node, ctx));
  return std::make_unique<NcclAllReduceKernel>(node, BackendOf(ctx.device).alignment(), parts, op,
                                               OverlapCommunication(ctx));
}

REGISTER_KERNEL({.op = "AllReduce",
                 .device = DeviceType::kCUDA,
                 .dtype = DType::kF32,
                 .create = CreateNcclAllReduce});
REGISTER_KERNEL({.op = "AllReduce",
                 .device = DeviceType::kCUDA,
                 .dtype = DType::kF64,
                 .create = CreateNcclAllReduce});

}  // namespace
}  // namespace lockstep::parallel
