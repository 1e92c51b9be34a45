#include "parallel/ops/stream_all_reduce.h"

#include <algorithm>
#include <string>

#include "core/backend.h"
#include "parallel/comm_group.h"
#include "parallel/ops/bucket_span.h"
#include "parallel/ops/device_collective_kernel.h"

namespace lockstep::parallel {
namespace {

class StreamAllReduceKernel : public Kernel {
 public:
  StreamAllReduceKernel(const Node& node, const Span& span, std::unique_ptr<WireBucket> wire,
                        ConvertFn convert, DeviceCollectives* collectives,
                        std::unique_ptr<DeviceCollectives::Done> done, ReduceOp op, bool overlap)
      : collectives_(collectives),
        op_(op),
        span_(span),
        wire_(std::move(wire)),
        convert_(convert),
        done_(std::move(done)) {
    // Arena memory may be rewritten by the next node on the compute stream, so only persistent
    // buffers are reduced behind it.
    asynchronous_ =
        overlap && std::none_of(node.inputs.begin(), node.inputs.end(),
                                [](const Value* v) { return v->alloc.region == Region::kArena; });
  }

  bool asynchronous() const override { return asynchronous_; }
  bool communicates() const override { return true; }
  bool replayable() const override { return true; }
  absl::Status BeforeLaunch() override { return collectives_->Usable(); }
  absl::Status AfterLaunch() override { return collectives_->WatchLaunched(label_); }
  absl::StatusOr<bool> HoldsOnEveryRank(bool mine) override {
    return collectives_->OnEveryRank(mine);
  }

  absl::Status Run(const KernelIO& io) override {
    if (tensors_.empty()) {
      tensors_ = BucketTensors(span_, io.outputs);
      if (wire_ != nullptr) wire_->Bind(tensors_);
    }
    if (wire_ == nullptr) {
      LS_ASSIGN_OR_RETURN(label_,
                          collectives_->EnqueueAllReduce(tensors_, op_, *done_, nullptr, nullptr));
    } else {
      LS_ASSIGN_OR_RETURN(label_,
                          collectives_->EnqueueAllReduce(
                              {wire_->wire()}, op_, *done_,
                              [this](void* stream) { return wire_->ToWire(convert_, stream); },
                              [this](void* stream) { return wire_->FromWire(convert_, stream); }));
    }
    return asynchronous_ ? absl::OkStatus() : Wait();
  }

  // Orders the compute stream after the reduction; the host goes on at once.
  absl::Status Wait() override { return collectives_->ComputeWaitsFor(*done_); }

 private:
  DeviceCollectives* collectives_;
  ReduceOp op_;
  Span span_;
  std::unique_ptr<WireBucket> wire_;  // null: reduced in the gradients' dtype
  ConvertFn convert_;
  std::unique_ptr<DeviceCollectives::Done> done_;
  std::string label_;  // the collective's, for the watch of each launch of a recorded step
  bool asynchronous_ = false;
  std::vector<Tensor> tensors_;
};

}  // namespace

KernelFactory StreamAllReduceFactory(ConvertFn convert) {
  return [convert](const Node& node,
                   const KernelContext& ctx) -> absl::StatusOr<std::unique_ptr<Kernel>> {
    LS_ASSIGN_OR_RETURN(ReduceOp op, ParseReduceOp(node.attrs.GetString("op")));
    const Span span = ContiguousSpan(node, BackendOf(ctx.device).alignment());
    LS_ASSIGN_OR_RETURN(std::unique_ptr<WireBucket> wire, WireBucket::For(node, span, ctx.device));
    LS_ASSIGN_OR_RETURN(DeviceCollectives * collectives, DeviceCollectivesFor(node, ctx));
    LS_ASSIGN_OR_RETURN(std::unique_ptr<DeviceCollectives::Done> done, collectives->MakeDone());
    return std::make_unique<StreamAllReduceKernel>(node, span, std::move(wire), convert,
                                                   collectives, std::move(done), op,
                                                   OverlapCommunication(ctx));
  };
}

}  // namespace lockstep::parallel
