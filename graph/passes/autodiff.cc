// Reverse-mode autodiff as a pass: walks the forward nodes in reverse topological order and
// emits each op's registered gradient rule as ordinary nodes; contributions to a value from
// several readers are summed with the op the registry names for it (OpRegistry::GradientSum).

#include <unordered_map>
#include <vector>

#include "graph/builder.h"
#include "graph/op_registry.h"
#include "graph/passes/passes.h"

namespace lockstep {
namespace {

using Contributions = std::unordered_map<const Value*, std::vector<Value*>>;

class AutodiffPass : public Pass {
 public:
  absl::string_view name() const override { return "Autodiff"; }

  absl::Status Run(Graph& graph, PassContext& ctx) override {
    const AutodiffOptions& options = ctx.autodiff;
    LS_ASSIGN_OR_RETURN(const OpDef* sum, OpRegistry::Global().GradientSum());
    Builder b(&graph);
    Contributions grads;
    LS_RETURN_IF_ERROR(Seed(graph, options, b, &grads));
    LS_ASSIGN_OR_RETURN(std::vector<Node*> wrt, WrtNodes(graph, options));
    std::vector<bool> reaches = ReachableFrom(graph, wrt);
    std::vector<Node*> forward;
    for (const auto& node : graph.nodes()) forward.push_back(node.get());
    for (auto it = forward.rbegin(); it != forward.rend(); ++it) {
      LS_RETURN_IF_ERROR(Backprop(**it, reaches, *sum, b, &grads));
    }
    return AddGradientOutputs(graph, wrt, *sum, b, grads);
  }

 private:
  static absl::Status Seed(Graph& graph, const AutodiffOptions& options, Builder& b,
                           Contributions* grads) {
    if (options.seeds.empty()) {
      const GraphOutput* loss = graph.FindOutput(options.loss);
      if (loss == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat("no graph output named '", options.loss, "' to differentiate"));
      }
      if (NumElements(loss->value->shape()) != 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "loss '", options.loss, "' must be a scalar, it is ", TypeToString(loss->value->type)));
      }
      b.SetNamePrefix("grad/seed/");
      (*grads)[loss->value].push_back(
          b.Op1("Fill", {}, {{"shape", loss->value->shape()}, {"value", options.loss_scale}}));
      return b.status();
    }
    for (const auto& [output_name, seed_name] : options.seeds) {
      const GraphOutput* output = graph.FindOutput(output_name);
      Node* seed = graph.FindInput(seed_name);
      if (output == nullptr || seed == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat("autodiff seed '", seed_name,
                                                       "' for output '", output_name,
                                                       "': no such output or input"));
      }
      if (seed->output()->type != output->value->type) {
        return absl::InvalidArgumentError(
            absl::StrCat("autodiff seed '", seed_name, "' is ", TypeToString(seed->output()->type),
                         ", output '", output_name, "' is ", TypeToString(output->value->type)));
      }
      (*grads)[output->value].push_back(seed->output());
    }
    return absl::OkStatus();
  }

  static absl::StatusOr<std::vector<Node*>> WrtNodes(const Graph& graph,
                                                     const AutodiffOptions& options) {
    if (options.wrt.empty()) return graph.InputNodes(InputRole::kParameter);
    std::vector<Node*> nodes;
    for (const std::string& name : options.wrt) {
      Node* node = graph.FindInput(name);
      if (node == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat("cannot differentiate with respect to '", name, "': no such input"));
      }
      nodes.push_back(node);
    }
    return nodes;
  }

  // Values that depend on one of the inputs we differentiate with respect to.
  static std::vector<bool> ReachableFrom(const Graph& graph, const std::vector<Node*>& wrt) {
    std::vector<bool> reaches(graph.value_count(), false);
    for (const Node* node : wrt) reaches[node->output()->id] = true;
    for (const auto& node : graph.nodes()) {
      bool any = false;
      for (const Value* input : node->inputs) any = any || reaches[input->id];
      if (!any) continue;
      for (const auto& output : node->outputs) reaches[output->id] = true;
    }
    return reaches;
  }

  static Value* Sum(Builder& b, const OpDef& sum, const std::vector<Value*>& terms) {
    Value* total = terms[0];
    for (size_t i = 1; i < terms.size(); ++i) total = b.Op1(sum.name(), {total, terms[i]});
    return total;
  }

  static absl::Status Backprop(const Node& node, const std::vector<bool>& reaches, const OpDef& sum,
                               Builder& b, Contributions* grads) {
    if (node.IsInput()) return absl::OkStatus();
    b.SetNamePrefix(absl::StrCat("grad/", node.name, "/"));
    std::vector<Value*> dys;
    bool any = false;
    for (const auto& output : node.outputs) {
      auto it = grads->find(output.get());
      bool flows = it != grads->end() && reaches[output->id];
      dys.push_back(flows ? Sum(b, sum, it->second) : nullptr);
      any = any || flows;
    }
    if (!any) return absl::OkStatus();
    if (!node.op->differentiable()) {
      return absl::InvalidArgumentError(
          absl::StrCat(node.Describe(), " has no gradient rule, but the loss depends on it"));
    }
    GradContext ctx{b, node, std::move(dys)};
    std::vector<Value*> input_grads = node.op->grad()(ctx);
    LS_RETURN_IF_ERROR(Annotate(b.status(), absl::StrCat("gradient of ", node.Describe())));
    if (input_grads.size() != node.inputs.size()) {
      return absl::InternalError(absl::StrCat("gradient rule of ", node.Describe(), " returned ",
                                              input_grads.size(), " gradients for ",
                                              node.inputs.size(), " inputs"));
    }
    for (size_t i = 0; i < input_grads.size(); ++i) {
      const Value* input = node.inputs[i];
      if (input_grads[i] == nullptr || !reaches[input->id]) continue;
      if (input_grads[i]->type != input->type) {
        return absl::InternalError(absl::StrCat(
            "gradient rule of ", node.Describe(), " gives input ", i, " a gradient of type ",
            TypeToString(input_grads[i]->type), ", the input is ", TypeToString(input->type)));
      }
      (*grads)[input].push_back(input_grads[i]);
    }
    return absl::OkStatus();
  }

  // Each gradient becomes its own value (parameter gradients get their own slot in the flat
  // gradient buffer), so one shared by two inputs, or an input itself, is copied.
  static absl::Status AddGradientOutputs(Graph& graph, const std::vector<Node*>& wrt,
                                         const OpDef& sum, Builder& b, const Contributions& grads) {
    b.SetNamePrefix("grad/");
    std::unordered_map<const Value*, bool> claimed;
    for (Node* node : wrt) {
      const Value* input = node->output();
      auto it = grads.find(input);
      Value* grad = it == grads.end()
                        ? b.Op1("Fill", {}, {{"shape", input->shape()}, {"value", 0.0}})
                        : Sum(b, sum, it->second);
      if (grad != nullptr && (claimed[grad] || grad->producer->IsInput())) {
        grad = b.Op1("Identity", {grad});
      }
      LS_RETURN_IF_ERROR(b.status());
      claimed[grad] = true;
      if (node->role() == InputRole::kParameter) {
        graph.AddGradientOutput(node, grad);
      } else {
        graph.AddOutput(GradientName(node->name), grad, OutputKind::kResult);
      }
    }
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<Pass> CreateAutodiffPass() { return std::make_unique<AutodiffPass>(); }

}  // namespace lockstep
