#include "train/passes/apply_optimizer.h"

#include <vector>

#include "graph/builder.h"

namespace lockstep::train {
namespace {

class ApplyOptimizerPass : public Pass {
 public:
  explicit ApplyOptimizerPass(const ApplyOptimizerOptions& options) : options_(options) {}
  absl::string_view name() const override { return "ApplyOptimizer"; }

  absl::Status Run(Graph& graph, PassContext& ctx) override {
    std::vector<GraphOutput> gradients;
    for (const GraphOutput& output : graph.outputs()) {
      if (output.kind == OutputKind::kGradient) gradients.push_back(output);
    }
    if (gradients.empty()) {
      return absl::FailedPreconditionError(
          "the graph has no parameter gradients to apply: run Autodiff first");
    }
    Builder b(&graph);
    LS_ASSIGN_OR_RETURN(Value * lr, LearningRate(graph, b));
    const Attrs attrs{
        {"momentum", options_.momentum},
        {"weight_decay", options_.weight_decay},
        {"nesterov", options_.nesterov},
        {"loss_scale", ctx.autodiff.loss_scale *
                           static_cast<double>(options_.accumulation_steps * options_.replicas)}};
    for (const GraphOutput& gradient : gradients) {
      Value* param = gradient.parameter->output();
      const std::string& parameter = gradient.parameter->name;
      Value* moment = b.State(MomentName(parameter), param->shape());
      b.SetNamePrefix(absl::StrCat("optimizer/", parameter, "/"));
      std::vector<Value*> updated = b.Op("Momentum", {param, gradient.value, moment, lr}, attrs);
      LS_RETURN_IF_ERROR(b.status());
      graph.AddOutput(absl::StrCat("update/", parameter), updated[0], OutputKind::kUpdate);
      graph.AddOutput(absl::StrCat("update/", MomentName(parameter)), updated[1],
                      OutputKind::kUpdate);
    }
    return absl::OkStatus();
  }

 private:
  absl::StatusOr<Value*> LearningRate(const Graph& graph, Builder& b) const {
    const Node* existing = graph.FindInput(options_.lr_input);
    if (existing == nullptr) return b.Input(options_.lr_input, {}, DType::kF32);
    const TensorType scalar{{}, DType::kF32};
    if (existing->role() != InputRole::kData || existing->output()->type != scalar) {
      return absl::InvalidArgumentError(absl::StrCat(
          "learning-rate input '", options_.lr_input, "' must be a f32[] data input, it is a ",
          InputRoleName(existing->role()), " ", TypeToString(existing->output()->type)));
    }
    return existing->output();
  }

  ApplyOptimizerOptions options_;
};

}  // namespace

std::unique_ptr<Pass> CreateApplyOptimizerPass(const ApplyOptimizerOptions& options) {
  return std::make_unique<ApplyOptimizerPass>(options);
}

std::string MomentName(const std::string& parameter) { return absl::StrCat("moments.", parameter); }

}  // namespace lockstep::train
