#include "graph/op_registry.h"

#include "absl/strings/str_join.h"
#include "core/logging.h"
#include "graph/graph.h"

namespace lockstep {

std::string TypeToString(const TensorType& type) {
  return absl::StrCat(DTypeName(type.dtype), ShapeToString(type.shape));
}

Value* GradContext::input(int i) const { return node.inputs[i]; }
Value* GradContext::output(int i) const { return node.outputs[i].get(); }
const Attrs& GradContext::attrs() const { return node.attrs; }

bool PrecisionPolicy::LowAt(AmpLevel level) const {
  return low_from.has_value() && level >= *low_from;
}

bool PrecisionPolicy::KeepsFloat32(int input, AmpLevel level) const {
  for (const Float32Input& kept : float32_inputs) {
    if (kept.input == input && (!kept.until.has_value() || level < *kept.until)) return true;
  }
  return false;
}

int OpDef::InPlaceInput(int output) const {
  if (in_place_each_) return output;
  const auto [outputs, inputs] = in_place_period_;
  const int group = outputs > 0 ? output / outputs : 0;
  const int within = outputs > 0 ? output % outputs : output;
  for (auto [out, in] : in_place_) {
    if (out == within) return group * inputs + in;
  }
  return -1;
}

absl::Status OpDef::CompleteAttrs(Attrs* attrs) const {
  for (const auto& [name, value] : attrs->items()) {
    bool declared = false;
    for (const AttrSpec& spec : attrs_) declared = declared || spec.name == name;
    if (!declared) {
      return absl::InvalidArgumentError(
          absl::StrCat("op ", name_, " has no attribute '", name, "'"));
    }
  }
  for (const AttrSpec& spec : attrs_) {
    if (attrs->Has(spec.name)) continue;
    if (spec.required) {
      return absl::InvalidArgumentError(
          absl::StrCat("op ", name_, " needs attribute '", spec.name, "'"));
    }
    attrs->Set(spec.name, spec.default_value);
  }
  return absl::OkStatus();
}

void RegisterInputOp(OpRegistry& registry);  // input_op.cc

OpRegistry& OpRegistry::Global() {
  static OpRegistry* registry = [] {
    auto* created = new OpRegistry();
    RegisterInputOp(*created);
    created->input_op_ = created->ops_.at("Input").get();
    return created;
  }();
  return *registry;
}

OpDef& OpRegistry::Register(const std::string& name) {
  LS_CHECK(ops_.count(name) == 0) << "op " << name << " registered twice";
  auto [it, inserted] = ops_.emplace(name, std::make_unique<OpDef>(name));
  return *it->second;
}

absl::StatusOr<const OpDef*> OpRegistry::Find(absl::string_view name) const {
  auto it = ops_.find(name);
  if (it == ops_.end()) {
    return absl::NotFoundError(
        absl::StrCat("unknown op '", name, "'; known ops: ", absl::StrJoin(Names(), ", ")));
  }
  return it->second.get();
}

std::vector<std::string> OpRegistry::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, def] : ops_) names.push_back(name);
  return names;
}

absl::StatusOr<const OpDef*> OpRegistry::GradientSum() const {
  std::vector<const OpDef*> found;
  for (const auto& [name, def] : ops_) {
    if (def->sums_gradients()) found.push_back(def.get());
  }
  if (found.size() == 1) return found[0];
  std::vector<std::string> names;
  for (const OpDef* def : found) names.push_back(def->name());
  return absl::FailedPreconditionError(absl::StrCat(
      "autodiff needs exactly one op declared SumsGradients() to sum gradients, found ",
      found.size(),
      found.empty() ? " (are the ops linked?)" : absl::StrCat(": ", absl::StrJoin(names, ", "))));
}

}  // namespace lockstep
