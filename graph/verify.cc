#include <set>

#include "absl/strings/str_cat.h"
#include "graph/graph.h"

namespace lockstep {
namespace {

absl::Status VerifyNode(const Node& node, const std::set<const Value*>& defined) {
  const OpDef& op = *node.op;
  if (op.num_inputs() != kVariadic && static_cast<int>(node.inputs.size()) != op.num_inputs()) {
    return absl::InternalError(absl::StrCat(node.Describe(), " has ", node.inputs.size(),
                                            " inputs, op declares ", op.num_inputs()));
  }
  if (op.num_outputs() != kVariadic && static_cast<int>(node.outputs.size()) != op.num_outputs()) {
    return absl::InternalError(absl::StrCat(node.Describe(), " has ", node.outputs.size(),
                                            " outputs, op declares ", op.num_outputs()));
  }
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (defined.count(node.inputs[i]) == 0) {
      return absl::InternalError(absl::StrCat(node.Describe(), " input ", i, " (",
                                              node.inputs[i]->Label(),
                                              ") is not defined before it"));
    }
  }
  for (const AttrSpec& spec : op.attrs()) {
    if (!node.attrs.Has(spec.name)) {
      return absl::InternalError(absl::StrCat(node.Describe(), " lacks attribute ", spec.name));
    }
  }
  return absl::OkStatus();
}

// Values whose memory is a parameter's gradient slot: where the in-place chains of the gradient
// outputs start (a gradient and the AllReduce that reduces it in place).
std::set<const Value*> GradientStorage(const Graph& graph) {
  std::set<const Value*> storage;
  for (const GraphOutput& output : graph.outputs()) {
    if (output.kind == OutputKind::kGradient) storage.insert(InPlaceRoot(output.value));
  }
  return storage;
}

// An in-place output overwrites its input: that input must be persistent (parameter, state or
// gradient storage, or written in place itself) and this node must be its last reader.
absl::Status VerifyInPlace(const Graph& graph, const Node& node, size_t position,
                           const std::vector<std::vector<Node*>>& consumers,
                           const std::set<const Value*>& gradient_storage) {
  for (size_t output = 0; output < node.outputs.size(); ++output) {
    const int input = node.op->InPlaceInput(static_cast<int>(output));
    if (input < 0) continue;
    const Value* target = node.inputs[input];
    const Node* producer = target->producer;
    const bool persistent = producer->IsInput() ? producer->role() != InputRole::kData
                                                : producer->op->InPlaceInput(target->index) >= 0 ||
                                                      gradient_storage.count(target) > 0;
    if (!persistent) {
      return absl::InternalError(absl::StrCat(node.Describe(), " writes output ", output,
                                              " in place into ", target->Label(),
                                              ", which is not a parameter, state or gradient"));
    }
    for (const Node* reader : consumers[target->id]) {
      if (graph.PositionOf(reader) > position) {
        return absl::InternalError(absl::StrCat(node.Describe(), " overwrites ", target->Label(),
                                                " before ", reader->Describe(), " reads it"));
      }
    }
  }
  return absl::OkStatus();
}

// Each gradient output links to its own parameter input of the same type: the memory plan puts
// it in that parameter's slot of the gradient buffer, and the optimizer updates that parameter.
absl::Status VerifyGradientLinks(const Graph& graph) {
  const std::vector<Node*> inputs = graph.InputNodes(InputRole::kParameter);
  const std::set<const Node*> parameters(inputs.begin(), inputs.end());
  std::set<const Node*> linked;
  for (const GraphOutput& output : graph.outputs()) {
    if (output.kind != OutputKind::kGradient) continue;
    if (parameters.count(output.parameter) == 0) {
      return absl::InternalError(absl::StrCat("gradient output ", output.name,
                                              " is not linked to a parameter input of the graph"));
    }
    const Value& parameter = *output.parameter->output();
    if (output.value->type != parameter.type) {
      return absl::InternalError(absl::StrCat(
          "gradient output ", output.name, " is ", TypeToString(output.value->type), ", its ",
          output.parameter->Describe(), " is ", TypeToString(parameter.type)));
    }
    if (!linked.insert(output.parameter).second) {
      return absl::InternalError(absl::StrCat("gradient output ", output.name,
                                              " is a second gradient of ",
                                              output.parameter->Describe()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status VerifyGraph(const Graph& graph) {
  std::set<const Value*> defined;
  std::set<int> node_ids;
  auto consumers = graph.Consumers();
  const std::set<const Value*> gradient_storage = GradientStorage(graph);
  for (size_t position = 0; position < graph.nodes().size(); ++position) {
    const Node& node = *graph.nodes()[position];
    if (!node_ids.insert(node.id).second) {
      return absl::InternalError(absl::StrCat(node.Describe(), " appears twice"));
    }
    LS_RETURN_IF_ERROR(VerifyNode(node, defined));
    LS_RETURN_IF_ERROR(VerifyInPlace(graph, node, position, consumers, gradient_storage));
    for (const auto& output : node.outputs) defined.insert(output.get());
  }
  for (const GraphOutput& output : graph.outputs()) {
    if (defined.count(output.value) == 0) {
      return absl::InternalError(
          absl::StrCat("graph output ", output.name, " refers to a value not in the graph"));
    }
  }
  return VerifyGradientLinks(graph);
}

}  // namespace lockstep
