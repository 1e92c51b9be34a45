// Kernel fusion, after autodiff and the training passes: where the device has one kernel that
// computes two ops in a single pass over memory, the pair becomes one node (what MindSpore's
// graph kernel fusion does, for the patterns ResNets are made of).
//  - BatchNorm -> Relu, whose backward is ReluGrad -> BatchNormGrad, becomes BatchNormRelu and
//    BatchNormReluGrad: the normalization applies the ReLU and keeps its mask for the backward,
//    so neither the ReLU nor its gradient reads and writes the activation again.
//  - MaxPool with its MaxPoolGrad becomes MaxPoolWithArgmax and MaxPoolGradWithArgmax: the
//    forward keeps where each maximum was, so the backward does not run the forward again.
//  - Add -> Relu (a residual connection) becomes AddRelu, and the ReLU's gradient reads its
//    output, which is > 0 exactly where the sum is: the sum is never written.
//  - Add -> ReluGrad (two gradients meeting at a ReLU's output, a residual block's input)
//    becomes AddReluGrad: the summed gradient is never written either.

#include <initializer_list>
#include <map>
#include <set>
#include <vector>

#include "graph/builder.h"
#include "graph/kernel.h"
#include "graph/passes/passes.h"

namespace lockstep {
namespace {

class FuseKernelsPass : public Pass {
 public:
  absl::string_view name() const override { return "FuseKernels"; }

  absl::Status Run(Graph& graph, PassContext& ctx) override {
    device_ = ctx.device.type;
    readers_ = graph.Consumers();
    results_.clear();
    for (const GraphOutput& output : graph.outputs()) results_.insert(output.value);
    replacement_.clear();
    fused_.clear();
    Builder builder(&graph);
    std::vector<Node*> order;
    for (const auto& node : graph.nodes()) order.push_back(node.get());
    for (Node* node : order) {
      if (node->op->name() == "BatchNorm") FuseNormRelu(builder, *node);
      if (node->op->name() == "MaxPool") KeepArgmax(builder, *node);
      if (node->op->name() == "Add") FuseAddRelu(builder, *node);
      if (node->op->name() == "ReluGrad") FuseAddReluGrad(builder, *node);
    }
    LS_RETURN_IF_ERROR(builder.status());
    graph.ReplaceUses(replacement_);
    graph.RemoveNodes([&](const Node& node) { return fused_.contains(&node); });
    return absl::OkStatus();
  }

 private:
  bool HasKernels(std::initializer_list<const char*> ops, DType dtype) const {
    for (const char* op : ops) {
      if (!KernelRegistry::Global().Has(op, device_, dtype)) return false;
    }
    return true;
  }

  // Readers of an intermediate value; empty for a graph output, which must stay as it is.
  const std::vector<Node*>& Readers(const Value* value) const {
    static const std::vector<Node*> kNone;
    return results_.contains(value) ? kNone : readers_[value->id];
  }

  // New nodes go right before `node` and are named beside it.
  static void PlaceBefore(Builder& b, const Node& node) {
    b.SetInsertBefore(&node);
    const size_t slash = node.name.rfind('/');
    b.SetNamePrefix(slash == std::string::npos ? "" : node.name.substr(0, slash + 1));
  }

  void Replace(const Node& old_node, const std::vector<Value*>& new_outputs) {
    for (size_t i = 0; i < new_outputs.size() && i < old_node.outputs.size(); ++i) {
      replacement_[old_node.output(static_cast<int>(i))] = new_outputs[i];
    }
    fused_.insert(&old_node);
  }

  // The Relu reading `x` and the ReluGrad whose forward input it is, when they are all that read
  // it (the ReluGrad is absent without a gradient); relu is null otherwise.
  struct ReluReaders {
    const Node* relu = nullptr;
    Node* relu_grad = nullptr;
  };
  ReluReaders OnlyReluReaders(const Value* x) const {
    ReluReaders found;
    for (Node* reader : Readers(x)) {
      if (reader->op->name() == "Relu") found.relu = reader;
      if (reader->op->name() == "ReluGrad" && reader->inputs[0] == x) found.relu_grad = reader;
    }
    const size_t expected = found.relu_grad == nullptr ? 1 : 2;
    if (Readers(x).size() != expected) found.relu = nullptr;
    return found;
  }

  void FuseNormRelu(Builder& b, const Node& norm) {
    const auto [relu, relu_grad] = OnlyReluReaders(norm.output(0));
    if (relu == nullptr || relu_grad == nullptr) return;
    const std::vector<Node*>& dy_readers = Readers(relu_grad->output());
    if (dy_readers.size() != 1) return;
    const Node& norm_grad = *dy_readers[0];
    // (x, gamma, saved_mean, saved_var, dy): the gradient of this very normalization.
    if (norm_grad.op->name() != "BatchNormGrad" || norm_grad.inputs[0] != norm.inputs[0] ||
        norm_grad.inputs[2] != norm.output(1) || norm_grad.inputs[3] != norm.output(2) ||
        norm_grad.inputs[4] != relu_grad->output()) {
      return;
    }
    if (!HasKernels({"BatchNormRelu", "BatchNormReluGrad"}, norm.output(0)->dtype())) return;

    PlaceBefore(b, norm);
    const std::vector<Value*> fused = b.Op("BatchNormRelu", norm.inputs, norm.attrs);
    if (fused.empty()) return;
    PlaceBefore(b, norm_grad);
    const std::vector<Value*> grads = b.Op("BatchNormReluGrad",
                                           {norm_grad.inputs[0], norm_grad.inputs[1], fused[1],
                                            fused[2], relu_grad->inputs[1], fused[5]},
                                           norm_grad.attrs);
    if (grads.empty()) return;
    Replace(norm, fused);
    replacement_[relu->output()] = fused[0];
    fused_.insert(relu);
    fused_.insert(relu_grad);
    Replace(norm_grad, grads);
  }

  void KeepArgmax(Builder& b, const Node& pool) {
    Value* x = pool.inputs[0];
    // MaxPoolGrad (x, dy) with the same window over the same x needs this very argmax.
    const Node* pool_grad = nullptr;
    for (const Node* reader : readers_[x->id]) {
      if (reader->op->name() == "MaxPoolGrad" && reader->inputs[0] == x &&
          reader->attrs.items() == pool.attrs.items() && !fused_.contains(reader)) {
        pool_grad = reader;
      }
    }
    if (pool_grad == nullptr ||
        !HasKernels({"MaxPoolWithArgmax", "MaxPoolGradWithArgmax"}, x->dtype())) {
      return;
    }
    PlaceBefore(b, pool);
    const std::vector<Value*> fused = b.Op("MaxPoolWithArgmax", {x}, pool.attrs);
    if (fused.empty()) return;
    Attrs grad_attrs = pool.attrs;
    grad_attrs.Set("input_shape", x->shape());
    PlaceBefore(b, *pool_grad);
    Value* dx = b.Op1("MaxPoolGradWithArgmax", {pool_grad->inputs[1], fused[1]}, grad_attrs);
    if (dx == nullptr) return;
    Replace(pool, fused);
    Replace(*pool_grad, {dx});
  }

  void FuseAddRelu(Builder& b, const Node& add) {
    const Value* sum = add.output();
    const auto [relu, relu_grad] = OnlyReluReaders(sum);
    if (relu == nullptr || !HasKernels({"AddRelu"}, sum->dtype())) return;
    PlaceBefore(b, add);
    Value* fused = b.Op1("AddRelu", add.inputs, add.attrs);
    if (fused == nullptr) return;
    if (relu_grad != nullptr) relu_grad->inputs[0] = fused;
    replacement_[relu->output()] = fused;
    fused_.insert(&add);
    fused_.insert(relu);
  }

  void FuseAddReluGrad(Builder& b, const Node& relu_grad) {
    const Value* sum = relu_grad.inputs[1];
    const Node& add = *sum->producer;
    if (fused_.contains(&relu_grad) || add.op->name() != "Add" || fused_.contains(&add) ||
        Readers(sum).size() != 1 || !HasKernels({"AddReluGrad"}, sum->dtype())) {
      return;
    }
    PlaceBefore(b, relu_grad);
    Value* fused =
        b.Op1("AddReluGrad", {relu_grad.inputs[0], add.inputs[0], add.inputs[1]}, relu_grad.attrs);
    if (fused == nullptr) return;
    Replace(relu_grad, {fused});
    fused_.insert(&add);
  }

  DeviceType device_ = DeviceType::kCPU;
  std::vector<std::vector<Node*>> readers_;
  std::set<const Value*> results_;
  std::map<const Value*, Value*> replacement_;
  std::set<const Node*> fused_;
};

}  // namespace

std::unique_ptr<Pass> CreateFuseKernelsPass() { return std::make_unique<FuseKernelsPass>(); }

}  // namespace lockstep
