// The AllReduce kernel for device memory, on NCCL, stream-ordered: the compute stream's work
// so far (the bucket's last gradient) is marked by an event that the communicator's stream
// waits on; the bucket is reduced there while the compute stream goes on with the backward,
// and the executor's Wait, before the bucket's first reader (its optimizer update), makes the
// compute stream wait on the reduction's event. The host never blocks inside a step. A bucket
// with a narrower wire dtype is converted into it and back on the communicator's stream, around
// the reduction (wire_bucket.h). A step recorded as a CUDA graph (Executor::ReplayAfter) holds
// the reduction too; each launch of it has the communicator watch the collective again.

#include <algorithm>
#include <string>

#include "core/backend.h"
#include "graph/kernel.h"
#include "ops/cuda/cuda_status.h"
#include "parallel/comm_group.h"
#include "parallel/nccl_communicator.h"
#include "parallel/ops/bucket_span.h"
#include "parallel/ops/cuda/nccl_kernel.h"
#include "parallel/ops/cuda/wire_convert.h"
#include "parallel/ops/wire_bucket.h"

namespace lockstep::parallel {
namespace {

// ConvertFn on the device (wire_convert.cu).
absl::Status ConvertOnDevice(const Tensor& from, const Tensor& to, void* stream) {
  LS_CHECK(from.numel() == to.numel()) << from.numel() << " elements into " << to.numel();
  CUDA_RETURN_IF_ERROR(cuda::LaunchConvert(from.raw_data(), from.dtype(), to.raw_data(), to.dtype(),
                                           from.numel(), static_cast<cudaStream_t>(stream)));
  return absl::OkStatus();
}

class NcclAllReduceKernel : public Kernel {
 public:
  NcclAllReduceKernel(const Node& node, const Span& span, std::unique_ptr<WireBucket> wire,
                      const NcclKernelParts& parts, ReduceOp op, bool overlap)
      : communicator_(parts.communicator),
        op_(op),
        span_(span),
        wire_(std::move(wire)),
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
  bool replayable() const override { return true; }
  absl::Status BeforeLaunch() override { return communicator_->Usable(); }
  absl::Status AfterLaunch() override { return communicator_->WatchLaunched(label_, compute_); }
  absl::StatusOr<bool> EveryRankRecorded(bool recorded) override {
    return communicator_->OnEveryRank(recorded);
  }

  absl::Status Run(const KernelIO& io) override {
    if (tensors_.empty()) {
      tensors_ = BucketTensors(span_, io.outputs);
      if (wire_ != nullptr) wire_->Bind(tensors_);
    }
    compute_ = static_cast<cudaStream_t>(io.stream);
    if (wire_ == nullptr) {
      LS_ASSIGN_OR_RETURN(label_, communicator_->EnqueueAllReduce(tensors_, op_, compute_, done_));
    } else {
      LS_ASSIGN_OR_RETURN(
          label_,
          communicator_->EnqueueAllReduce(
              {wire_->wire()}, op_, compute_, done_,
              [this](cudaStream_t stream) { return wire_->ToWire(ConvertOnDevice, stream); },
              [this](cudaStream_t stream) { return wire_->FromWire(ConvertOnDevice, stream); }));
    }
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
  std::unique_ptr<WireBucket> wire_;  // null: reduced in the gradients' dtype
  cudaEvent_t done_;
  std::string label_;  // the collective's, for the watch of each launch of a recorded step
  bool asynchronous_ = false;
  cudaStream_t compute_ = nullptr;
  std::vector<Tensor> tensors_;
};

absl::StatusOr<std::unique_ptr<Kernel>> CreateNcclAllReduce(const Node& node,
                                                            const KernelContext& ctx) {
  LS_ASSIGN_OR_RETURN(ReduceOp op, ParseReduceOp(node.attrs.GetString("op")));
  const Span span = ContiguousSpan(node, BackendOf(ctx.device).alignment());
  LS_ASSIGN_OR_RETURN(std::unique_ptr<WireBucket> wire, WireBucket::For(node, span, ctx.device));
  LS_ASSIGN_OR_RETURN(NcclKernelParts parts, NcclPartsFor(node, ctx));
  return std::make_unique<NcclAllReduceKernel>(node, span, std::move(wire), parts, op,
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
