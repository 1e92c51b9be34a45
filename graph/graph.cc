#include "graph/graph.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/logging.h"
#include "graph/kernel.h"

namespace lockstep {

const char* RegionName(Region region) {
  switch (region) {
    case Region::kNone:
      return "none";
    case Region::kArena:
      return "arena";
    case Region::kInputs:
      return "inputs";
    case Region::kParameters:
      return "parameters";
    case Region::kGradients:
      return "gradients";
    case Region::kState:
      return "state";
  }
  return "?";
}

const char* InputRoleName(InputRole role) {
  switch (role) {
    case InputRole::kData:
      return "data";
    case InputRole::kParameter:
      return "parameter";
    case InputRole::kState:
      return "state";
  }
  return "?";
}

const char* OutputKindName(OutputKind kind) {
  switch (kind) {
    case OutputKind::kResult:
      return "result";
    case OutputKind::kGradient:
      return "gradient";
    case OutputKind::kUpdate:
      return "update";
  }
  return "?";
}

std::string GradientName(absl::string_view input) { return absl::StrCat("grad/", input); }

std::string Value::Label() const { return absl::StrCat("%", id); }

Node::Node() = default;
Node::~Node() = default;

bool Node::IsInput() const { return op->name() == "Input"; }

InputRole Node::role() const {
  const std::string& role = attrs.GetString("role");
  if (role == "parameter") return InputRole::kParameter;
  if (role == "state") return InputRole::kState;
  return InputRole::kData;
}

std::string Node::Describe() const {
  return absl::StrCat(op->name(), " node '", name, "' (#", id, ")");
}

std::unique_ptr<Node> Graph::MakeNode(const OpDef* op, std::string name, Attrs attrs,
                                      std::vector<Value*> inputs,
                                      const std::vector<TensorType>& output_types) {
  auto node = std::make_unique<Node>();
  node->id = next_node_id_++;
  node->op = op;
  node->name = name.empty() ? absl::StrCat(op->name(), "_", node->id) : std::move(name);
  node->attrs = std::move(attrs);
  node->inputs = std::move(inputs);
  for (size_t i = 0; i < output_types.size(); ++i) {
    auto value = std::make_unique<Value>();
    value->id = next_value_id_++;
    value->type = output_types[i];
    value->producer = node.get();
    value->index = static_cast<int>(i);
    node->outputs.push_back(std::move(value));
  }
  return node;
}

Node* Graph::AddNode(const OpDef* op, std::string name, Attrs attrs, std::vector<Value*> inputs,
                     const std::vector<TensorType>& output_types) {
  return InsertNode(nodes_.size(), op, std::move(name), std::move(attrs), std::move(inputs),
                    output_types);
}

Node* Graph::InsertNode(size_t before, const OpDef* op, std::string name, Attrs attrs,
                        std::vector<Value*> inputs, const std::vector<TensorType>& output_types) {
  auto node = MakeNode(op, std::move(name), std::move(attrs), std::move(inputs), output_types);
  Node* raw = node.get();
  nodes_.insert(nodes_.begin() + static_cast<std::ptrdiff_t>(before), std::move(node));
  return raw;
}

void Graph::RemoveNodes(const std::function<bool(const Node&)>& remove) {
  std::erase_if(nodes_, [&](const std::unique_ptr<Node>& node) { return remove(*node); });
}

void Graph::ReplaceUses(const std::map<const Value*, Value*>& replacement) {
  for (const auto& node : nodes_) {
    for (Value*& input : node->inputs) {
      auto it = replacement.find(input);
      if (it != replacement.end()) input = it->second;
    }
  }
  for (GraphOutput& output : outputs_) {
    auto it = replacement.find(output.value);
    if (it != replacement.end()) output.value = it->second;
  }
}

size_t Graph::PositionOf(const Node* node) const {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].get() == node) return i;
  }
  LS_CHECK(false) << "node " << node->name << " is not in the graph";
  return 0;
}

void Graph::AddOutput(std::string name, Value* value, OutputKind kind) {
  outputs_.push_back({std::move(name), value, kind});
}

void Graph::AddGradientOutput(const Node* parameter, Value* gradient) {
  outputs_.push_back({GradientName(parameter->name), gradient, OutputKind::kGradient, parameter});
}

const GraphOutput* Graph::FindOutput(absl::string_view name) const {
  for (const GraphOutput& output : outputs_) {
    if (output.name == name) return &output;
  }
  return nullptr;
}

const GraphOutput* Graph::FindGradientOutput(const Node* parameter) const {
  for (const GraphOutput& output : outputs_) {
    if (output.kind == OutputKind::kGradient && output.parameter == parameter) return &output;
  }
  return nullptr;
}

std::vector<Node*> Graph::InputNodes(InputRole role) const {
  std::vector<Node*> result;
  for (const auto& node : nodes_) {
    if (node->IsInput() && node->role() == role) result.push_back(node.get());
  }
  return result;
}

Node* Graph::FindInput(absl::string_view name) const {
  for (const auto& node : nodes_) {
    if (node->IsInput() && node->name == name) return node.get();
  }
  return nullptr;
}

std::vector<std::vector<Node*>> Graph::Consumers() const {
  std::vector<std::vector<Node*>> consumers(next_value_id_);
  for (const auto& node : nodes_) {
    for (Value* input : node->inputs) consumers[input->id].push_back(node.get());
  }
  return consumers;
}

std::string DumpGraph(const Graph& graph) {
  std::string out;
  for (const auto& node : graph.nodes()) {
    std::vector<std::string> results, args;
    for (const auto& v : node->outputs) {
      absl::StrAppend(&out, v->Label(), node->outputs.size() > 1 ? " " : "");
      results.push_back(absl::StrCat(TypeToString(v->type), " ", LayoutName(v->layout), " @",
                                     RegionName(v->alloc.region), "+", v->alloc.offset));
    }
    for (const Value* v : node->inputs) args.push_back(v->Label());
    absl::StrAppend(&out, "= ", node->op->name(), "(", absl::StrJoin(args, ", "), ") ",
                    node->attrs.ToString(), " : ", absl::StrJoin(results, ", "), "  # ", node->name,
                    "\n");
  }
  for (const GraphOutput& output : graph.outputs()) {
    absl::StrAppend(&out, "output ", output.name, " = ", output.value->Label(), " (",
                    OutputKindName(output.kind), ")\n");
  }
  return out;
}

Value* InPlaceRoot(Value* value) {
  while (!value->producer->IsInput()) {
    const int input = value->producer->op->InPlaceInput(value->index);
    if (input < 0) break;
    value = value->producer->inputs[input];
  }
  return value;
}

}  // namespace lockstep
