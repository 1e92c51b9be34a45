#include "graph/fusion.h"

#include "core/logging.h"

namespace lockstep {

FusionContext::FusionContext(Graph* graph) : builder_(graph), readers_(graph->Consumers()) {
  for (const GraphOutput& output : graph->outputs()) results_.insert(output.value);
}

const std::vector<Node*>& FusionContext::AllReaders(const Value* value) const {
  return readers_[value->id];
}

const std::vector<Node*>& FusionContext::Readers(const Value* value) const {
  static const std::vector<Node*> kNone;
  return results_.contains(value) ? kNone : readers_[value->id];
}

FusionContext::OpAndGrad FusionContext::OnlyReaders(const Value* x, absl::string_view op,
                                                    absl::string_view grad_op) const {
  OpAndGrad found;
  for (Node* reader : Readers(x)) {
    if (reader->op->name() == op) found.op = reader;
    if (reader->op->name() == grad_op && reader->inputs[0] == x) found.grad = reader;
  }
  const size_t expected = found.grad == nullptr ? 1 : 2;
  if (Readers(x).size() != expected) found.op = nullptr;
  return found;
}

Builder& FusionContext::Before(const Node& node) {
  builder_.SetInsertBefore(&node);
  const size_t slash = node.name.rfind('/');
  builder_.SetNamePrefix(slash == std::string::npos ? "" : node.name.substr(0, slash + 1));
  return builder_;
}

void FusionContext::Replace(const Node& old_node, const std::vector<Value*>& new_outputs) {
  for (size_t i = 0; i < new_outputs.size() && i < old_node.outputs.size(); ++i) {
    replacement_[old_node.output(static_cast<int>(i))] = new_outputs[i];
  }
  fused_.insert(&old_node);
}

FusionRegistry& FusionRegistry::Global() {
  static auto* registry = new FusionRegistry();
  return *registry;
}

bool FusionRegistry::Register(FusionPattern pattern) {
  LS_CHECK(names_.insert(pattern.name).second)
      << "fusion pattern " << pattern.name << " registered twice";
  std::vector<FusionPattern>& patterns = by_anchor_[pattern.anchor];
  patterns.push_back(std::move(pattern));
  return true;
}

const std::vector<FusionPattern>& FusionRegistry::AnchoredAt(absl::string_view op) const {
  static const std::vector<FusionPattern> kNone;
  auto it = by_anchor_.find(op);
  return it == by_anchor_.end() ? kNone : it->second;
}

}  // namespace lockstep
