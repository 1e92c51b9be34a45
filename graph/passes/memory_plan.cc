// Static memory plan. Graph inputs live in flat per-role buffers (data inputs, parameters,
// state); each parameter's gradient sits in the gradient buffer at the same offset as the
// parameter, so a byte range of one is the matching byte range of the other. In-place outputs
// share their input's memory. Every other value gets an offset in one arena, reusing memory of
// values whose lifetimes do not overlap (greedy by size, first fit).

#include <algorithm>
#include <map>
#include <vector>

#include "core/allocator.h"
#include "core/backend.h"
#include "graph/passes/passes.h"

namespace lockstep {
namespace {

struct Interval {
  Value* value;
  size_t first;  // position of the producer
  size_t last;   // position of the last reader
  size_t bytes;
};

class MemoryPlanPass : public Pass {
 public:
  absl::string_view name() const override { return "MemoryPlan"; }

  absl::Status Run(Graph& graph, PassContext& ctx) override {
    LS_ASSIGN_OR_RETURN(const Backend* backend, FindBackend(ctx.device.type));
    MemoryPlanSizes& sizes = graph.plan();
    sizes = MemoryPlanSizes{.alignment = backend->alignment()};
    PlaceInputs(graph, &sizes);
    LS_RETURN_IF_ERROR(PlaceGradients(graph, &sizes));
    PlaceInPlaceOutputs(graph);
    sizes.arena = PlaceArena(Lifetimes(graph, sizes.alignment));
    return absl::OkStatus();
  }

 private:
  static void PlaceInputs(Graph& graph, MemoryPlanSizes* sizes) {
    for (const auto& node : graph.nodes()) {
      if (!node->IsInput()) continue;
      Value* value = node->output();
      InputRole role = node->role();
      size_t* end = role == InputRole::kParameter ? &sizes->parameters
                    : role == InputRole::kState   ? &sizes->state
                                                  : &sizes->inputs;
      value->alloc = {role == InputRole::kParameter ? Region::kParameters
                      : role == InputRole::kState   ? Region::kState
                                                    : Region::kInputs,
                      *end};
      *end += AlignUp(value->bytes(), sizes->alignment);
    }
  }

  static absl::Status PlaceGradients(Graph& graph, MemoryPlanSizes* sizes) {
    // Forward-only graphs (eval) need no gradient buffer.
    for (const GraphOutput& output : graph.outputs()) {
      if (output.kind != OutputKind::kGradient) continue;
      sizes->gradients = sizes->parameters;
      // The memory is that of the value the in-place chain (e.g. an AllReduce) started from.
      Value* storage = InPlaceRoot(output.value);
      if (storage->producer->IsInput()) {
        return absl::InternalError(absl::StrCat("gradient output ", output.name,
                                                " has no memory of its own: it is graph input ",
                                                storage->producer->name));
      }
      storage->alloc = {Region::kGradients, output.parameter->output()->alloc.offset};
    }
    return absl::OkStatus();
  }

  // Runs after PlaceGradients: outputs written in place take their input's (planned) memory.
  static void PlaceInPlaceOutputs(Graph& graph) {
    for (const auto& node : graph.nodes()) {
      for (size_t output = 0; output < node->outputs.size(); ++output) {
        const int input = node->op->InPlaceInput(static_cast<int>(output));
        if (input >= 0) node->outputs[output]->alloc = node->inputs[input]->alloc;
      }
    }
  }

  // Values still without a place, with the span of node positions during which they live.
  static std::vector<Interval> Lifetimes(Graph& graph, size_t alignment) {
    std::map<const Value*, Interval> live;
    const auto& nodes = graph.nodes();
    for (size_t position = 0; position < nodes.size(); ++position) {
      for (const auto& output : nodes[position]->outputs) {
        if (output->alloc.region != Region::kNone) continue;
        live[output.get()] = {output.get(), position, position,
                              AlignUp(output->bytes(), alignment)};
      }
      for (const Value* input : nodes[position]->inputs) {
        auto it = live.find(input);
        if (it != live.end()) it->second.last = position;
      }
    }
    for (const GraphOutput& output : graph.outputs()) {
      auto it = live.find(output.value);
      if (it != live.end()) it->second.last = nodes.size();
    }
    std::vector<Interval> intervals;
    for (const auto& [value, interval] : live) intervals.push_back(interval);
    return intervals;
  }

  // Largest first; each takes the lowest offset that does not collide with an already placed
  // value alive at the same time.
  static size_t PlaceArena(std::vector<Interval> intervals) {
    std::stable_sort(intervals.begin(), intervals.end(), [](const Interval& a, const Interval& b) {
      return a.bytes != b.bytes ? a.bytes > b.bytes : a.value->id < b.value->id;
    });
    std::vector<const Interval*> placed;
    size_t arena = 0;
    for (Interval& interval : intervals) {
      std::vector<std::pair<size_t, size_t>> taken;  // [begin, end) of overlapping values
      for (const Interval* other : placed) {
        if (other->first <= interval.last && interval.first <= other->last) {
          taken.emplace_back(other->value->alloc.offset, other->value->alloc.offset + other->bytes);
        }
      }
      std::sort(taken.begin(), taken.end());
      size_t offset = 0;
      for (auto [begin, end] : taken) {
        if (offset + interval.bytes <= begin) break;
        offset = std::max(offset, end);
      }
      interval.value->alloc = {Region::kArena, offset};
      arena = std::max(arena, offset + interval.bytes);
      placed.push_back(&interval);
    }
    return arena;
  }
};

}  // namespace

std::unique_ptr<Pass> CreateMemoryPlanPass() { return std::make_unique<MemoryPlanPass>(); }

}  // namespace lockstep
