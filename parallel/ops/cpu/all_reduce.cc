// The AllReduce kernel for host memory: one collective over the bucket's byte range (see
// bucket_span.h). When OverlapCommunication says so, Run queues it on the group's
// communication thread and returns, so the rest of the backward overlaps it, and the executor
// waits before the optimizer reads it; otherwise Run waits for it. A bucket with a narrower
// wire dtype is converted into it and back on that thread too (wire_bucket.h).

#include <algorithm>

#include "core/backend.h"
#include "graph/kernel.h"
#include "parallel/comm_group.h"
#include "parallel/ops/bucket_span.h"
#include "parallel/ops/wire_bucket.h"

namespace lockstep::parallel {
namespace {

class AllReduceKernel : public Kernel {
 public:
  AllReduceKernel(const Node& node, const Span& span, std::unique_ptr<WireBucket> wire,
                  CommGroup* group, ReduceOp op, bool overlap)
      : group_(group), op_(op), span_(span), wire_(std::move(wire)), label_(node.Describe()) {
    // Arena memory may be reused by the next node, so only persistent buffers are overlapped.
    asynchronous_ =
        overlap && std::none_of(node.inputs.begin(), node.inputs.end(),
                                [](const Value* v) { return v->alloc.region == Region::kArena; });
  }

  bool asynchronous() const override { return asynchronous_; }
  bool communicates() const override { return true; }

  absl::Status Run(const KernelIO& io) override {
    BindTensors(io);
    auto reduce = [this] {
      if (wire_ != nullptr) return wire_->AllReduceOnHost(*group_->communicator, op_);
      for (const Tensor& tensor : tensors_)
        LS_RETURN_IF_ERROR(group_->communicator->AllReduce(tensor, op_));
      return absl::OkStatus();
    };
    if (!asynchronous_) return group_->RunNow(label_, reduce);
    handle_ = group_->queue->Submit(label_, reduce);
    return absl::OkStatus();
  }

  absl::Status Wait() override { return handle_.Wait(group_->options.collective_timeout); }

 private:
  // The executor's views never move, so this is done once.
  void BindTensors(const KernelIO& io) {
    if (!tensors_.empty()) return;
    tensors_ = BucketTensors(span_, io.outputs);
    if (wire_ != nullptr) wire_->Bind(tensors_);
  }

  CommGroup* group_;
  ReduceOp op_;
  Span span_;
  std::unique_ptr<WireBucket> wire_;  // null: reduced in the gradients' dtype
  std::string label_;
  bool asynchronous_ = false;
  std::vector<Tensor> tensors_;
  CollectiveHandle handle_;
};

absl::StatusOr<std::unique_ptr<Kernel>> CreateAllReduce(const Node& node,
                                                        const KernelContext& ctx) {
  LS_ASSIGN_OR_RETURN(ReduceOp op, ParseReduceOp(node.attrs.GetString("op")));
  LS_ASSIGN_OR_RETURN(CommGroup * group, GroupFor(node, ctx));
  const Span span = ContiguousSpan(node, BackendOf(ctx.device).alignment());
  LS_ASSIGN_OR_RETURN(std::unique_ptr<WireBucket> wire, WireBucket::For(node, span, ctx.device));
  return std::make_unique<AllReduceKernel>(node, span, std::move(wire), group, op,
                                           OverlapCommunication(ctx));
}

// Reduced in place, in whatever layout the gradients are kept.
REGISTER_KERNEL({.op = "AllReduce",
                 .dtype = DType::kF32,
                 .create = CreateAllReduce,
                 .layouts = SameLayoutAsEachInput});
REGISTER_KERNEL({.op = "AllReduce",
                 .dtype = DType::kF64,
                 .create = CreateAllReduce,
                 .layouts = SameLayoutAsEachInput});

}  // namespace
}  // namespace lockstep::parallel
