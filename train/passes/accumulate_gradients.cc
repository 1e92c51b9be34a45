#include "train/passes/accumulate_gradients.h"

#include <vector>

#include "graph/builder.h"

namespace lockstep::train {
namespace {

class AccumulateGradientsPass : public Pass {
 public:
  absl::string_view name() const override { return "AccumulateGradients"; }

  absl::Status Run(Graph& graph, PassContext& ctx) override {
    LS_ASSIGN_OR_RETURN(const MicroBatch* role, ctx.config.Require<MicroBatch>(name()));
    Builder b(&graph);
    Value* beta = *role == MicroBatch::kAccumulate ? b.Input(kAccumulateBetaInput, {}) : nullptr;
    std::vector<GraphOutput> accumulated;
    bool any = false;
    for (GraphOutput& output : graph.outputs()) {
      if (output.kind != OutputKind::kGradient) continue;
      any = true;
      const std::string name = AccumulatorName(output.parameter->name);
      Value* accum = b.State(name, output.value->shape());
      b.SetNamePrefix(absl::StrCat("accumulate/", output.parameter->name, "/"));
      if (*role == MicroBatch::kLast) {
        output.value = b.Op1("Add", {output.value, accum});
      } else {
        accumulated.push_back({absl::StrCat("update/", name),
                               b.Op1("Accumulate", {accum, output.value, beta}),
                               OutputKind::kUpdate});
      }
    }
    LS_RETURN_IF_ERROR(b.status());
    if (!any)
      return absl::FailedPreconditionError("no gradients to accumulate: run Autodiff first");
    if (*role == MicroBatch::kAccumulate) {
      std::erase_if(graph.outputs(),
                    [](const GraphOutput& output) { return output.kind == OutputKind::kGradient; });
      for (GraphOutput& output : accumulated)
        graph.AddOutput(output.name, output.value, output.kind);
    }
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<Pass> CreateAccumulateGradientsPass() {
  return std::make_unique<AccumulateGradientsPass>();
}

std::string AccumulatorName(const std::string& parameter) {
  return absl::StrCat("accum.", parameter);
}

}  // namespace lockstep::train
