#include "train/passes/apply_optimizer.h"

#include <map>
#include <vector>

#include "graph/builder.h"

namespace lockstep::train {
namespace {

class ApplyOptimizerPass : public Pass {
 public:
  absl::string_view name() const override { return "ApplyOptimizer"; }

  absl::Status Run(Graph& graph, PassContext& ctx) override {
    LS_ASSIGN_OR_RETURN(const ApplyOptimizerOptions* options,
                        ctx.config.Require<ApplyOptimizerOptions>(name()));
    std::vector<GraphOutput> gradients;
    for (const GraphOutput& output : graph.outputs()) {
      if (output.kind == OutputKind::kGradient) gradients.push_back(output);
    }
    if (gradients.empty()) {
      return absl::FailedPreconditionError(
          "the graph has no parameter gradients to apply: run Autodiff first");
    }
    Builder b(&graph);
    LS_ASSIGN_OR_RETURN(Value * lr, LearningRate(graph, options->lr_input, b));
    const bool dynamic = options->dynamic_loss_scale.has_value();
    // The dynamic scale is an input of Momentum; the attribute keeps the rest of the divisor.
    const double fixed_scale = dynamic ? 1.0 : ctx.autodiff.loss_scale;
    const Attrs attrs{{"momentum", options->momentum},
                      {"weight_decay", options->weight_decay},
                      {"nesterov", options->nesterov},
                      {"loss_scale", fixed_scale * options->gradient_divisor *
                                         static_cast<double>(options->accumulation_steps *
                                                             options->replicas)}};
    std::vector<Value*> scale_inputs;  // (loss_scale, finite) under dynamic loss scaling
    if (dynamic) {
      LS_ASSIGN_OR_RETURN(scale_inputs, CheckGradientsFinite(graph, gradients, b));
    }
    for (const BucketGradients& group : GroupByBucket(gradients)) {
      std::vector<Value*> inputs;  // (param, grad, moment) for each, then the scalars
      for (const GraphOutput& gradient : group.gradients) {
        Value* param = gradient.parameter->output();
        inputs.insert(
            inputs.end(),
            {param, gradient.value, b.State(MomentName(gradient.parameter->name), param->shape())});
      }
      inputs.push_back(lr);
      inputs.insert(inputs.end(), scale_inputs.begin(), scale_inputs.end());
      b.SetNamePrefix(group.bucket != nullptr ? absl::StrCat("optimizer/", group.bucket->name, "/")
                                              : "optimizer/");
      std::vector<Value*> updated = b.Op("Momentum", inputs, attrs);
      LS_RETURN_IF_ERROR(b.status());
      for (size_t t = 0; t < group.gradients.size(); ++t) {
        const std::string& parameter = group.gradients[t].parameter->name;
        graph.AddOutput(absl::StrCat("update/", parameter), updated[2 * t], OutputKind::kUpdate);
        graph.AddOutput(absl::StrCat("update/", MomentName(parameter)), updated[2 * t + 1],
                        OutputKind::kUpdate);
      }
    }
    return dynamic ? UpdateLossScale(graph, scale_inputs, *options->dynamic_loss_scale, b)
                   : absl::OkStatus();
  }

 private:
  // The gradients one AllReduce bucket reduces; bucket null: no AllReduce (one process).
  struct BucketGradients {
    const Node* bucket;
    std::vector<GraphOutput> gradients;
  };

  // One Momentum node per AllReduce bucket, so that a device updates a bucket's parameters in
  // one launch as soon as that bucket is reduced; without AllReduce (one process), one node.
  static std::vector<BucketGradients> GroupByBucket(const std::vector<GraphOutput>& gradients) {
    std::vector<BucketGradients> groups;
    std::map<const Node*, size_t> group_of;  // bucket (or null) -> index in groups
    for (const GraphOutput& gradient : gradients) {
      const Node* producer = gradient.value->producer;
      const Node* bucket = producer->op->name() == "AllReduce" ? producer : nullptr;
      auto [it, added] = group_of.emplace(bucket, groups.size());
      if (added) groups.push_back({bucket, {}});
      groups[it->second].gradients.push_back(gradient);
    }
    return groups;
  }

  // AllFinite over every gradient (after their AllReduce: all ranks agree) into the graph
  // output kGradientsFiniteOutput; returns (loss_scale, finite) for the Momentum nodes.
  static absl::StatusOr<std::vector<Value*>> CheckGradientsFinite(
      Graph& graph, const std::vector<GraphOutput>& gradients, Builder& b) {
    const Node* scale = graph.FindInput(kLossScaleState);
    if (scale == nullptr || scale->role() != InputRole::kState ||
        scale->output()->type != TensorType{{}, DType::kF32}) {
      return absl::FailedPreconditionError(
          absl::StrCat("dynamic loss scaling needs the f32[] state input '", kLossScaleState,
                       "' that seeds the backward"));
    }
    std::vector<Value*> values;
    for (const GraphOutput& gradient : gradients) values.push_back(gradient.value);
    b.SetNamePrefix("loss_scale/");
    Value* finite = b.Op1("AllFinite", values);
    LS_RETURN_IF_ERROR(b.status());
    graph.AddOutput(kGradientsFiniteOutput, finite, OutputKind::kResult);
    return std::vector<Value*>{scale->output(), finite};
  }

  // After every Momentum has read the scale: UpdateLossScale, in place.
  static absl::Status UpdateLossScale(Graph& graph, const std::vector<Value*>& scale_inputs,
                                      const DynamicLossScale& scaling, Builder& b) {
    Value* good_steps = b.State(kLossScaleGoodStepsState, {}, DType::kI32);
    b.SetNamePrefix("loss_scale/");
    std::vector<Value*> updated =
        b.Op("UpdateLossScale", {scale_inputs[0], good_steps, scale_inputs[1]},
             {{"factor", scaling.factor}, {"window", scaling.window}});
    LS_RETURN_IF_ERROR(b.status());
    graph.AddOutput(absl::StrCat("update/", kLossScaleState), updated[0], OutputKind::kUpdate);
    graph.AddOutput(absl::StrCat("update/", kLossScaleGoodStepsState), updated[1],
                    OutputKind::kUpdate);
    return absl::OkStatus();
  }

  static absl::StatusOr<Value*> LearningRate(const Graph& graph, const std::string& lr_input,
                                             Builder& b) {
    const Node* existing = graph.FindInput(lr_input);
    if (existing == nullptr) return b.Input(lr_input, {}, DType::kF32);
    const TensorType scalar{{}, DType::kF32};
    if (existing->role() != InputRole::kData || existing->output()->type != scalar) {
      return absl::InvalidArgumentError(absl::StrCat(
          "learning-rate input '", lr_input, "' must be a f32[] data input, it is a ",
          InputRoleName(existing->role()), " ", TypeToString(existing->output()->type)));
    }
    return existing->output();
  }
};

}  // namespace

std::unique_ptr<Pass> CreateApplyOptimizerPass() { return std::make_unique<ApplyOptimizerPass>(); }

std::string MomentName(const std::string& parameter) { return absl::StrCat("moments.", parameter); }

}  // namespace lockstep::train
