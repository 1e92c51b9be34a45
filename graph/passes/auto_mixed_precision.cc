// AutoMixedPrecision: before Autodiff, gives every forward node the dtype its op's precision
// policy (graph/op_def.h) names at the amp level (graph/amp.h), with Cast nodes where a value
// arrives in another dtype. Autodiff then carries gradients back through Cast, whose gradient is
// a Cast back, so parameter gradients arrive in float32 like their parameters. Only float values
// (IsFloat) are cast: integers (labels), masks and f64 never.

#include <map>
#include <utility>
#include <vector>

#include "graph/amp.h"
#include "graph/builder.h"
#include "graph/passes/passes.h"

namespace lockstep {
namespace {

constexpr char kCast[] = "Cast";

class Rewriter {
 public:
  Rewriter(Graph& graph, const AmpOptions& options)
      : graph_(graph), builder_(&graph), options_(options) {}

  absl::Status Run() {
    std::vector<DType> original;  // of each graph output
    for (const GraphOutput& output : graph_.outputs()) original.push_back(output.value->dtype());
    std::vector<Node*> forward;
    for (const auto& node : graph_.nodes()) {
      if (!node->IsInput()) forward.push_back(node.get());
    }
    for (Node* node : forward) LS_RETURN_IF_ERROR(Rewrite(*node));
    return RestoreOutputs(original);
  }

 private:
  // Casts the node's floating inputs to the dtypes its policy asks for at this level, then
  // infers its outputs again from what it now reads.
  absl::Status Rewrite(Node& node) {
    const PrecisionPolicy& policy = node.op->precision();
    if (!policy.follows_input) {
      const DType compute = policy.LowAt(options_.level) ? options_.dtype : DType::kF32;
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        if (!IsFloat(node.inputs[i]->dtype())) continue;
        const bool float32 = policy.KeepsFloat32(static_cast<int>(i), options_.level);
        LS_ASSIGN_OR_RETURN(node.inputs[i],
                            CastTo(node.inputs[i], float32 ? DType::kF32 : compute, &node));
      }
    }
    return Reinfer(node);
  }

  absl::Status Reinfer(Node& node) const {
    std::vector<TensorType> input_types;
    for (const Value* input : node.inputs) input_types.push_back(input->type);
    absl::StatusOr<std::vector<TensorType>> types = node.op->infer()({input_types, node.attrs});
    if (!types.ok()) {
      return Annotate(types.status(),
                      absl::StrCat(node.Describe(), " at amp level ", AmpLevelName(options_.level),
                                   " (", DTypeName(options_.dtype), ")"));
    }
    LS_CHECK(types->size() == node.outputs.size()) << node.Describe();
    for (size_t i = 0; i < types->size(); ++i) {
      LS_CHECK((*types)[i].shape == node.outputs[i]->shape()) << node.Describe();
      node.outputs[i]->type = (*types)[i];
    }
    return absl::OkStatus();
  }

  // `value` in `dtype`, for `reader` (null: a graph output). One Cast per (value, dtype), put
  // before its first reader and shared by the others, so a parameter is cast once per step. A
  // Cast's output is never cast again: a source of it already in `dtype` is used, or its first
  // source is cast.
  absl::StatusOr<Value*> CastTo(Value* value, DType dtype, const Node* reader) {
    while (value->dtype() != dtype && value->producer->op->name() == kCast &&
           IsFloat(value->producer->inputs[0]->dtype())) {
      value = value->producer->inputs[0];
    }
    if (value->dtype() == dtype) return value;
    Value*& cast = casts_[{value, dtype}];
    if (cast == nullptr) {
      builder_.SetInsertBefore(reader);
      builder_.SetNamePrefix(absl::StrCat(value->producer->name, "/amp/"));
      cast = builder_.Op1(kCast, {value}, {{"dtype", std::string(DTypeName(dtype))}});
      LS_RETURN_IF_ERROR(builder_.status());
    }
    return cast;
  }

  // Results keep the dtype they had (the loss, logits and metrics stay float32). Updates are
  // written in place into float32 state, which policies keep float32.
  absl::Status RestoreOutputs(const std::vector<DType>& original) {
    for (size_t i = 0; i < original.size(); ++i) {
      GraphOutput& output = graph_.outputs()[i];
      if (output.value->dtype() == original[i]) continue;
      if (output.kind != OutputKind::kResult) {
        return absl::InternalError(absl::StrCat(
            "amp level ", AmpLevelName(options_.level), " turned ", OutputKindName(output.kind),
            " output ", output.name, " from ", DTypeName(original[i]), " into ",
            DTypeName(output.value->dtype()), ": its op must keep that input float32"));
      }
      LS_ASSIGN_OR_RETURN(output.value, CastTo(output.value, original[i], nullptr));
    }
    return absl::OkStatus();
  }

  Graph& graph_;
  Builder builder_;
  const AmpOptions& options_;
  std::map<std::pair<const Value*, DType>, Value*> casts_;
};

class AutoMixedPrecisionPass : public Pass {
 public:
  absl::string_view name() const override { return "AutoMixedPrecision"; }

  absl::Status Run(Graph& graph, PassContext& ctx) override {
    LS_ASSIGN_OR_RETURN(const AmpOptions* options,
                        ctx.config.Require<AmpOptions>("pass AutoMixedPrecision"));
    LS_RETURN_IF_ERROR(CheckAmpOptions(*options));
    return Rewriter(graph, *options).Run();
  }
};

}  // namespace

std::unique_ptr<Pass> CreateAutoMixedPrecisionPass() {
  return std::make_unique<AutoMixedPrecisionPass>();
}

}  // namespace lockstep
