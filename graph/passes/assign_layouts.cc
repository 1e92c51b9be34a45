// Layout assignment: each kernel says which layout it wants for its inputs and which it
// produces; where a producer and a consumer disagree, the backend's reorder op goes in between
// (one per value and layout, shared by all readers). Parameters and state are stored in the layout
// their first reader wants (convolution weights blocked, moments like their parameter), since the
// graph owns their memory; data inputs and results stay plain, for the caller. Gradients and
// updates keep their layout: they live in the flat buffers beside their parameter.

#include <map>
#include <set>
#include <utility>

#include "core/backend.h"
#include "graph/kernel.h"
#include "graph/op_registry.h"
#include "graph/passes/passes.h"

namespace lockstep {
namespace {

class AssignLayoutsPass : public Pass {
 public:
  absl::string_view name() const override { return "AssignLayouts"; }

  absl::Status Run(Graph& graph, PassContext& ctx) override {
    LS_ASSIGN_OR_RETURN(backend_, FindBackend(ctx.device.type));
    const SharedLayouts shared{ctx.shared_layouts.value_or(backend_->SharedLayoutOffer())};
    reorder_op_ = nullptr;
    reorders_.clear();
    stored_.clear();
    std::vector<Node*> order;
    for (const auto& node : graph.nodes()) order.push_back(node.get());
    for (Node* node : order) {
      if (node->IsInput()) continue;
      LS_ASSIGN_OR_RETURN(const KernelDef* def,
                          KernelRegistry::Global().Find(*node, ctx.device.type));
      std::vector<Layout> producer_layouts;
      for (const Value* input : node->inputs) producer_layouts.push_back(input->layout);
      LayoutChoice choice = def->layouts(*node, producer_layouts, shared);
      for (size_t i = 0; i < node->inputs.size(); ++i) {
        Value* input = node->inputs[i];
        if (input->producer->IsInput() && input->producer->role() != InputRole::kData &&
            stored_.insert(input).second) {
          input->layout = choice.inputs[i];
        }
        LS_ASSIGN_OR_RETURN(node->inputs[i], Convert(graph, input, choice.inputs[i], node));
      }
      for (size_t i = 0; i < node->outputs.size(); ++i)
        node->outputs[i]->layout = choice.outputs[i];
    }
    for (GraphOutput& output : graph.outputs()) {
      if (output.kind == OutputKind::kResult) {
        LS_ASSIGN_OR_RETURN(output.value, Convert(graph, output.value, Layout::kPlain, nullptr));
      }
    }
    return absl::OkStatus();
  }

 private:
  // `value` in `layout`, reordered right before `reader` (or at the end) when needed.
  absl::StatusOr<Value*> Convert(Graph& graph, Value* value, Layout layout, const Node* reader) {
    if (value->layout == layout) return value;
    auto key = std::make_pair(value, layout);
    auto it = reorders_.find(key);
    if (it != reorders_.end()) return it->second;
    LS_ASSIGN_OR_RETURN(const OpDef* reorder_op, ReorderOp(*value, layout));
    size_t position = reader ? graph.PositionOf(reader) : graph.nodes().size();
    Node* reorder =
        graph.InsertNode(position, reorder_op, absl::StrCat("reorder/", value->id),
                         {{"layout", std::string(LayoutName(layout))}}, {value}, {value->type});
    reorder->output()->layout = layout;
    reorder->converts_layout = true;
    reorders_[key] = reorder->output();
    return reorder->output();
  }

  absl::StatusOr<const OpDef*> ReorderOp(const Value& value, Layout layout) {
    if (reorder_op_ != nullptr) return reorder_op_;
    if (backend_->reorder_op().empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          value.Label(), " is ", LayoutName(value.layout), " and a reader wants ",
          LayoutName(layout), ", but the ", backend_->name(), " backend names no reorder op"));
    }
    LS_ASSIGN_OR_RETURN(reorder_op_, OpRegistry::Global().Find(backend_->reorder_op()));
    return reorder_op_;
  }

  const Backend* backend_ = nullptr;
  const OpDef* reorder_op_ = nullptr;  // the backend's, found on first use
  std::map<std::pair<Value*, Layout>, Value*> reorders_;
  std::set<const Value*> stored_;  // parameters and state whose layout is decided
};

}  // namespace

std::unique_ptr<Pass> CreateAssignLayoutsPass() { return std::make_unique<AssignLayoutsPass>(); }

}  // namespace lockstep
