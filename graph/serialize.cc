#include "graph/serialize.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <map>
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

// What the fingerprint covers: the graph without the workspace, and without what each host's
// backend decides for itself: the layout conversions AssignLayouts inserted (their readers read
// the converted value), activations' layouts and places, the arena's size. Parameters, gradients
// and state keep their layouts and offsets: those the ranks must share.
proto::GraphDef JobView(const proto::GraphDef& graph) {
  proto::GraphDef view = graph;
  if (view.has_plan()) {
    view.mutable_plan()->clear_workspace();
    view.mutable_plan()->clear_arena();
  }
  std::map<int32_t, int32_t> converted;  // a conversion's output -> the value it converts
  auto source = [&](int32_t id) {
    for (auto it = converted.find(id); it != converted.end(); it = converted.find(id)) {
      id = it->second;
    }
    return id;
  };
  auto* nodes = view.mutable_nodes();
  for (auto it = nodes->begin(); it != nodes->end();) {
    if (it->converts_layout() && it->inputs_size() == 1 && it->outputs_size() == 1) {
      converted[it->outputs(0).id()] = it->inputs(0);
      it = nodes->erase(it);
      continue;
    }
    for (int32_t& input : *it->mutable_inputs()) input = source(input);
    for (proto::ValueInfo& output : *it->mutable_outputs()) {
      if (output.region() != RegionName(Region::kArena)) continue;
      output.clear_layout();
      output.clear_offset();
    }
    ++it;
  }
  for (proto::GraphOutput& output : *view.mutable_outputs())
    output.set_value(source(output.value()));
  return view;
}

// Fingerprints of builds before JobView: the whole graph but the workspace.
std::string WholeGraphFingerprint(proto::GraphDef graph) {
  if (graph.has_plan()) graph.mutable_plan()->clear_workspace();
  return Hash(std::move(graph));
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
    def->set_converts_layout(node->converts_layout);
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

std::string Fingerprint(const proto::GraphDef& graph) { return Hash(JobView(graph)); }

std::string Fingerprint(const Graph& graph) { return ToProto(graph).fingerprint(); }

bool IsOwnFingerprint(const proto::GraphDef& graph) {
  // Graphs saved before the workspace was left out hashed it too.
  return graph.fingerprint() == Fingerprint(graph) ||
         graph.fingerprint() == WholeGraphFingerprint(graph) || graph.fingerprint() == Hash(graph);
}

}  // namespace lockstep
