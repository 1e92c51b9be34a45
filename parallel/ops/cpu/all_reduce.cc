// The AllReduce kernel for host memory. A node's inputs (one fused bucket of gradients) lie
// back to back in the flat gradient buffer, so one collective over their byte range reduces
// them all without a copy. When OverlapCommunication() says so, Run queues it on the group's
// communication thread and returns, so the rest of the backward overlaps it, and the executor
// waits before the optimizer reads it; otherwise Run waits for it.

#include <algorithm>
#include <numeric>

#include "core/allocator.h"
#include "graph/kernel.h"
#include "parallel/comm_group.h"

namespace lockstep::parallel {
namespace {

// The inputs of `node` as one span of memory, when they are back to back in one region
// (alignment padding between them is zeros in the gradient buffer and reduces to zeros).
struct Span {
  bool contiguous = false;
  size_t first_input = 0;  // the input at the lowest offset
  int64_t elements = 0;
};

Span ContiguousSpan(const Node& node) {
  std::vector<size_t> order(node.inputs.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return node.inputs[a]->alloc.offset < node.inputs[b]->alloc.offset;
  });
  const Allocation first = node.inputs[order[0]]->alloc;
  size_t end = first.offset;
  for (size_t i : order) {
    const Value& value = *node.inputs[i];
    if (value.alloc.region != first.region || value.alloc.offset != AlignUp(end)) return {};
    end = value.alloc.offset + value.bytes();
  }
  const size_t element = SizeOf(node.inputs[0]->dtype());
  return {true, order[0], static_cast<int64_t>((end - first.offset) / element)};
}

class AllReduceKernel : public Kernel {
 public:
  AllReduceKernel(const Node& node, CommGroup* group, ReduceOp op)
      : group_(group), op_(op), span_(ContiguousSpan(node)), label_(node.Describe()) {
    // Arena memory may be reused by the next node, so only persistent buffers are overlapped.
    asynchronous_ = OverlapCommunication() &&
                    std::none_of(node.inputs.begin(), node.inputs.end(),
                                 [](const Value* v) { return v->alloc.region == Region::kArena; });
  }

  bool asynchronous() const override { return asynchronous_; }
  bool communicates() const override { return true; }

  absl::Status Run(const KernelIO& io) override {
    BindTensors(io);
    auto reduce = [this] {
      for (const Tensor& tensor : tensors_)
        LS_RETURN_IF_ERROR(group_->communicator->AllReduce(tensor, op_));
      return absl::OkStatus();
    };
    if (!asynchronous_) return group_->RunNow(label_, reduce);
    handle_ = group_->queue->Submit(label_, reduce);
    return absl::OkStatus();
  }

  absl::Status Wait() override { return handle_.Wait(CollectiveTimeout()); }

 private:
  // What one run reduces: the whole span as one tensor, else every output on its own. The
  // executor's views never move, so this is done once.
  void BindTensors(const KernelIO& io) {
    if (!tensors_.empty()) return;
    if (!span_.contiguous) {
      tensors_ = io.outputs;
      return;
    }
    const Tensor& first = io.outputs[span_.first_input];
    tensors_.push_back(first.View(0, {span_.elements}, first.dtype()));
  }

  CommGroup* group_;
  ReduceOp op_;
  Span span_;
  std::string label_;
  bool asynchronous_ = false;
  std::vector<Tensor> tensors_;
  CollectiveHandle handle_;
};

absl::StatusOr<std::unique_ptr<Kernel>> CreateAllReduce(const Node& node) {
  LS_ASSIGN_OR_RETURN(ReduceOp op, ParseReduceOp(node.attrs.GetString("op")));
  LS_ASSIGN_OR_RETURN(CommGroup * group, FindGroup(node.attrs.GetString("group"), Device::CPU()));
  return std::make_unique<AllReduceKernel>(node, group, op);
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
