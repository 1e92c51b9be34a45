#include "inference/fold_batch_norm.h"

#include <cmath>
#include <set>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "graph/builder.h"
#include "graph/op_registry.h"

namespace lockstep::inference {
namespace {

bool IsParameter(const Value* value) {
  return value->producer->IsInput() && value->producer->role() != InputRole::kData;
}

// The `conv_op` node whose output only `bn` reads, and whose weight only it reads; null otherwise.
Node* FoldableConv(const Node& bn, const OpDef* conv_op,
                   const std::vector<std::vector<Node*>>& consumers) {
  Node* conv = bn.inputs[0]->producer;
  if (conv->op != conv_op || consumers[bn.inputs[0]->id].size() != 1) return nullptr;
  const Value* weight = conv->inputs[1];
  if (!IsParameter(weight) || consumers[weight->id].size() != 1) return nullptr;
  for (size_t i = 1; i < bn.inputs.size(); ++i) {
    if (!IsParameter(bn.inputs[i])) return nullptr;
  }
  return conv;
}

std::string BiasName(const std::string& weight) {
  return absl::EndsWith(weight, ".weight")
             ? absl::StrCat(weight.substr(0, weight.size() - 6), "bias")
             : absl::StrCat(weight, ".bias");
}

// Scales w (O, I, kh, kw) per output channel and returns the bias.
Tensor FoldValues(const Node& bn, Tensor* w, const std::map<std::string, Tensor>& weights) {
  auto at = [&](int i) { return weights.at(bn.inputs[i]->producer->name).data<float>(); };
  const float* gamma = at(1);
  const float* beta = at(2);
  const float* mean = at(3);
  const float* var = at(4);
  const double epsilon = bn.attrs.GetFloat("epsilon");
  const int64_t channels = w->dim(0);
  const int64_t per_channel = w->numel() / channels;
  Tensor scaled = Tensor::Empty(w->shape(), DType::kF32);
  Tensor bias = Tensor::Empty({channels}, DType::kF32);
  for (int64_t o = 0; o < channels; ++o) {
    const double s = gamma[o] / std::sqrt(static_cast<double>(var[o]) + epsilon);
    for (int64_t k = 0; k < per_channel; ++k) {
      const int64_t i = o * per_channel + k;
      scaled.data<float>()[i] = static_cast<float>(w->data<float>()[i] * s);
    }
    bias.data<float>()[o] = static_cast<float>(beta[o] - mean[o] * s);
  }
  *w = scaled;
  return bias;
}

}  // namespace

absl::Status FoldBatchNorm(Graph* graph, std::map<std::string, Tensor>* weights) {
  LS_ASSIGN_OR_RETURN(const OpDef* norm_op, OpRegistry::Global().Find("BatchNormInference"));
  LS_ASSIGN_OR_RETURN(const OpDef* conv_op, OpRegistry::Global().Find("Conv2D"));
  std::vector<Node*> norms;
  for (const auto& node : graph->nodes()) {
    if (node->op == norm_op) norms.push_back(node.get());
  }
  std::set<const Node*> folded;
  for (Node* bn : norms) {
    Node* conv = FoldableConv(*bn, conv_op, graph->Consumers());
    if (conv == nullptr) continue;
    const std::string& weight = conv->inputs[1]->producer->name;
    const std::string bias_name = BiasName(weight);
    if (graph->FindInput(bias_name) != nullptr) continue;
    Tensor bias = FoldValues(*bn, &weights->at(weight), *weights);
    Builder b(graph);
    b.SetInsertBefore(bn);
    Value* bias_value = b.Parameter(bias_name, bias.shape());
    const size_t slash = bn->name.rfind('/');
    b.SetNamePrefix(slash == std::string::npos ? "" : bn->name.substr(0, slash + 1));
    Value* y = b.Op1("BiasAdd", {bn->inputs[0], bias_value});
    LS_RETURN_IF_ERROR(Annotate(b.status(), absl::StrCat("folding ", bn->Describe())));
    (*weights)[bias_name] = bias;
    graph->ReplaceUses({{bn->output(), y}});
    folded.insert(bn);
  }
  graph->RemoveNodes([&](const Node& node) { return folded.contains(&node); });
  // The batch norms' own parameters and statistics, now read by nobody.
  const std::vector<std::vector<Node*>> consumers = graph->Consumers();
  graph->RemoveNodes([&](const Node& node) {
    const bool unused =
        node.IsInput() && node.role() != InputRole::kData && consumers[node.output()->id].empty();
    if (unused) weights->erase(node.name);
    return unused;
  });
  return VerifyGraph(*graph);
}

}  // namespace lockstep::inference
