#include <vector>

#include "graph/passes/passes.h"

namespace lockstep {
namespace {

// Keeps the nodes that a graph output depends on, and every graph input (inputs are the
// interface: a parameter nobody reads is still a parameter).
class DeadCodeElimPass : public Pass {
 public:
  absl::string_view name() const override { return "DeadCodeElim"; }

  absl::Status Run(Graph& graph, PassContext&) override {
    std::vector<bool> live_value(graph.value_count(), false);
    for (const GraphOutput& output : graph.outputs()) live_value[output.value->id] = true;
    const auto& nodes = graph.nodes();
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      const Node& node = **it;
      bool live = node.IsInput();
      for (const auto& output : node.outputs) live = live || live_value[output->id];
      if (!live) continue;
      for (const Value* input : node.inputs) live_value[input->id] = true;
    }
    graph.RemoveNodes([&](const Node& node) {
      if (node.IsInput()) return false;
      for (const auto& output : node.outputs) {
        if (live_value[output->id]) return false;
      }
      return true;
    });
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<Pass> CreateDeadCodeElimPass() { return std::make_unique<DeadCodeElimPass>(); }

}  // namespace lockstep
