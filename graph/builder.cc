#include "graph/builder.h"

#include "absl/strings/str_join.h"
#include "graph/op_registry.h"

namespace lockstep {

Value* Builder::Input(const std::string& name, Shape shape, DType dtype) {
  return AddInput(name, std::move(shape), dtype, InputRole::kData);
}
Value* Builder::Parameter(const std::string& name, Shape shape, DType dtype) {
  return AddInput(name, std::move(shape), dtype, InputRole::kParameter);
}
Value* Builder::State(const std::string& name, Shape shape, DType dtype) {
  return AddInput(name, std::move(shape), dtype, InputRole::kState);
}

Value* Builder::AddInput(const std::string& name, Shape shape, DType dtype, InputRole role) {
  if (!status_.ok()) return nullptr;
  if (graph_->FindInput(name) != nullptr) {
    status_ = absl::InvalidArgumentError(absl::StrCat("graph input '", name, "' defined twice"));
    return nullptr;
  }
  Attrs attrs{{"role", std::string(InputRoleName(role))},
              {"shape", shape},
              {"dtype", std::string(DTypeName(dtype))}};
  std::vector<Value*> outputs = Op("Input", {}, std::move(attrs));
  if (outputs.empty() || outputs[0] == nullptr) return nullptr;
  outputs[0]->producer->name = name;
  return outputs[0];
}

std::vector<Value*> Builder::Op(absl::string_view op, std::vector<Value*> inputs, Attrs attrs) {
  absl::StatusOr<Node*> node = AddNode(op, std::move(inputs), std::move(attrs));
  if (!node.ok()) {
    if (status_.ok()) status_ = node.status();
    return {};
  }
  std::vector<Value*> outputs;
  for (const auto& output : (*node)->outputs) outputs.push_back(output.get());
  return outputs;
}

Value* Builder::Op1(absl::string_view op, std::vector<Value*> inputs, Attrs attrs) {
  std::vector<Value*> outputs = Op(op, std::move(inputs), std::move(attrs));
  return outputs.empty() ? nullptr : outputs[0];
}

absl::StatusOr<Node*> Builder::AddNode(absl::string_view op_name, std::vector<Value*> inputs,
                                       Attrs attrs) {
  LS_RETURN_IF_ERROR(status_);
  LS_ASSIGN_OR_RETURN(const OpDef* op, OpRegistry::Global().Find(op_name));
  // The name the node gets: "<prefix><Op>_<id>".
  std::string name = absl::StrCat(prefix_, op->name(), "_", graph_->next_node_id());
  std::string where = absl::StrCat(op->name(), " (node '", name, "')");
  if (op->num_inputs() != kVariadic && static_cast<int>(inputs.size()) != op->num_inputs()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " takes ", op->num_inputs(), " inputs, got ", inputs.size()));
  }
  std::vector<TensorType> input_types;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": input ", i, " is null"));
    }
    input_types.push_back(inputs[i]->type);
  }
  LS_RETURN_IF_ERROR(Annotate(op->CompleteAttrs(&attrs), where));
  absl::StatusOr<std::vector<TensorType>> output_types = op->infer()({input_types, attrs});
  if (!output_types.ok()) {
    std::vector<std::string> shapes;
    for (const TensorType& t : input_types) shapes.push_back(TypeToString(t));
    return Annotate(output_types.status(),
                    absl::StrCat(where, " with inputs ", absl::StrJoin(shapes, ", ")));
  }
  const size_t position =
      insert_before_ ? graph_->PositionOf(insert_before_) : graph_->nodes().size();
  return graph_->InsertNode(position, op, std::move(name), std::move(attrs), std::move(inputs),
                            *output_types);
}

}  // namespace lockstep
