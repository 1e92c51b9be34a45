#include "graph/op_registry.h"
#include "parallel/comm_group.h"
#include "parallel/passes/passes.h"
#include "parallel/wire_dtype.h"

namespace lockstep::parallel {
namespace {

// Puts "%g' = AllReduce(%g)" right after the node that produces each parameter gradient, so
// that it can start as soon as the gradient is ready, and makes %g' the gradient output. The
// AllReduce sums: a mean's 1/world is divided out by the optimizer with the loss scale, which
// saves a pass over every gradient. Its "wire_dtype" is ParallelOptions::allreduce_dtype, and
// "bytes" what crosses the wire in it.
class InsertAllReducePass : public Pass {
 public:
  absl::string_view name() const override { return "InsertAllReduce"; }

  absl::Status Run(Graph& graph, PassContext& ctx) override {
    LS_ASSIGN_OR_RETURN(const OpDef* all_reduce, OpRegistry::Global().Find("AllReduce"));
    const ParallelOptions* options = ctx.config.Get<ParallelOptions>();
    const DType wire = options == nullptr ? DType::kF32 : options->allreduce_dtype;
    bool any = false;
    for (GraphOutput& output : graph.outputs()) {
      if (output.kind != OutputKind::kGradient) continue;
      any = true;
      Value* gradient = output.value;
      LS_RETURN_IF_ERROR(
          Annotate(CheckWireDType(gradient->dtype(), wire), "ParallelOptions::allreduce_dtype"));
      const int64_t wire_bytes =
          static_cast<int64_t>(gradient->bytes() / SizeOf(gradient->dtype()) * SizeOf(wire));
      const Attrs attrs{{"op", std::string("sum")},
                        {"group", std::string(kWorldGroup)},
                        {"fusion", int64_t{0}},
                        {"bytes", wire_bytes},
                        {"wire_dtype", std::string(DTypeName(wire))}};
      Node* node = graph.InsertNode(graph.PositionOf(gradient->producer) + 1, all_reduce,
                                    absl::StrCat("allreduce/", output.name), attrs, {gradient},
                                    {gradient->type});
      output.value = node->output();
    }
    if (!any) {
      return absl::FailedPreconditionError(
          "the graph has no parameter gradients to all-reduce: run Autodiff first");
    }
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<Pass> CreateInsertAllReducePass() {
  return std::make_unique<InsertAllReducePass>();
}

}  // namespace lockstep::parallel
