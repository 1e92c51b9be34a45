#include "graph/serialize.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <utility>

#include "absl/strings/str_format.h"

namespace lockstep {
namespace {

proto::AttrValue AttrToProto(const AttrValue& value) {
  proto::AttrValue out;
  struct Visitor {
    proto::AttrValue* out;
    void operator()(int64_t v) const { out->set_i(v); }
    void operator()(double v) const { out->set_f(v); }
    void operator()(bool v) const { out->set_b(v); }
    void operator()(const std::string& v) const { out->set_s(v); }
    void operator()(const std::vector<int64_t>& v) const {
      out->mutable_ints()->mutable_values()->Add(v.begin(), v.end());
    }
    void operator()(const std::vector<double>& v) const {
      out->mutable_floats()->mutable_values()->Add(v.begin(), v.end());
    }
  };
  std::visit(Visitor{&out}, value);
  return out;
}

void ValueToProto(const Value& value, proto::ValueInfo* out) {
  out->set_id(value.id);
  out->mutable_dims()->Add(value.shape().begin(), value.shape().end());
  out->set_dtype(std::string(DTypeName(value.dtype())));
  out->set_layout(std::string(LayoutName(value.layout)));
  out->set_region(std::string(RegionName(value.alloc.region)));
  out->set_offset(value.alloc.offset);
}

void PlanToProto(const MemoryPlanSizes& plan, proto::MemoryPlan* out) {
  out->set_arena(plan.arena);
  out->set_inputs(plan.inputs);
  out->set_parameters(plan.parameters);
  out->set_gradients(plan.gradients);
  out->set_state(plan.state);
  out->set_workspace(plan.workspace);
}

std::string DeterministicBytes(const proto::GraphDef& graph) {
  std::string bytes;
  google::protobuf::io::StringOutputStream stream(&bytes);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  graph.SerializeToCodedStream(&coded);
  coded.Trim();
  return bytes;
}

// FNV-1a 64 of `graph` with its fingerprint field empty.
std::string Hash(proto::GraphDef graph) {
  graph.clear_fingerprint();
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a 64 offset basis
  for (unsigned char byte : DeterministicBytes(graph)) {
    hash = (hash ^ byte) * 0x100000001b3ull;
  }
  return absl::StrFormat("%016x", hash);
}

}  // namespace

proto::GraphDef ToProto(const Graph& graph) {
  proto::GraphDef out;
  for (const auto& node : graph.nodes()) {
    proto::NodeDef* def = out.add_nodes();
    def->set_id(node->id);
    def->set_op(node->op->name());
    def->set_name(node->name);
    for (const auto& [name, value] : node->attrs.items())
      (*def->mutable_attrs())[name] = AttrToProto(value);
    for (const Value* input : node->inputs) def->add_inputs(input->id);
    for (const auto& output : node->outputs) ValueToProto(*output, def->add_outputs());
    if (node->IsInput() && node->role() == InputRole::kParameter) {
      proto::Parameter* parameter = out.add_parameters();
      const Value& value = *node->output();
      parameter->set_name(node->name);
      parameter->mutable_dims()->Add(value.shape().begin(), value.shape().end());
      parameter->set_dtype(std::string(DTypeName(value.dtype())));
      parameter->set_offset(value.alloc.offset);
      parameter->set_bytes(value.bytes());
    }
  }
  for (const GraphOutput& output : graph.outputs()) {
    proto::GraphOutput* def = out.add_outputs();
    def->set_name(output.name);
    def->set_value(output.value->id);
    def->set_kind(std::string(OutputKindName(output.kind)));
    if (output.parameter != nullptr) def->set_parameter(output.parameter->output()->id);
  }
  PlanToProto(graph.plan(), out.mutable_plan());
  out.set_fingerprint(Fingerprint(out));
  return out;
}

std::string Fingerprint(const proto::GraphDef& graph) {
  proto::GraphDef copy = graph;
  if (copy.has_plan()) copy.mutable_plan()->clear_workspace();
  return Hash(std::move(copy));
}

std::string Fingerprint(const Graph& graph) { return ToProto(graph).fingerprint(); }

bool IsOwnFingerprint(const proto::GraphDef& graph) {
  // Graphs saved before the workspace was left out hashed it too.
  return graph.fingerprint() == Fingerprint(graph) || graph.fingerprint() == Hash(graph);
}

}  // namespace lockstep
