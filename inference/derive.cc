// The forward slice of a training graph (.meta), rebuilt as an inference graph through the
// Builder, so that every node is checked and shaped again by its op's registered inference.

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ckpt/naming.h"
#include "graph/builder.h"
#include "graph/op_registry.h"
#include "inference/inference_model.h"

namespace lockstep::inference {
namespace {

// The names train::Model gives the net's data inputs and its loss output.
constexpr absl::string_view kImages = "images";
constexpr absl::string_view kLabels = "labels";
constexpr absl::string_view kLoss = "loss";

AttrValue AttrFromProto(const proto::AttrValue& value) {
  switch (value.value_case()) {
    case proto::AttrValue::kI:
      return value.i();
    case proto::AttrValue::kF:
      return value.f();
    case proto::AttrValue::kB:
      return value.b();
    case proto::AttrValue::kS:
      return value.s();
    case proto::AttrValue::kInts:
      return std::vector<int64_t>(value.ints().values().begin(), value.ints().values().end());
    case proto::AttrValue::kFloats:
      return std::vector<double>(value.floats().values().begin(), value.floats().values().end());
    case proto::AttrValue::VALUE_NOT_SET:
      break;
  }
  return std::string();
}

std::string Describe(const proto::NodeDef& node) {
  return absl::StrCat(node.op(), " node '", node.name(), "' (#", node.id(), ")");
}

// The ops that have an inference form, for error messages.
std::string OpsWithInferenceForm() {
  std::vector<std::string> names;
  for (const std::string& name : OpRegistry::Global().Names()) {
    if ((*OpRegistry::Global().Find(name))->inference_form().has_value()) names.push_back(name);
  }
  return absl::StrJoin(names, ", ");
}

// Whether a training node is a graph input (the registry's Input op).
bool IsInput(const proto::NodeDef& node) {
  absl::StatusOr<const OpDef*> op = OpRegistry::Global().Find(node.op());
  return op.ok() && *op == &OpRegistry::Global().InputOp();
}

class Deriver {
 public:
  Deriver(const proto::GraphDef& training, int64_t batch_size)
      : training_(training),
        batch_size_(batch_size),
        graph_(std::make_unique<Graph>()),
        b_(graph_.get()) {}

  absl::StatusOr<std::unique_ptr<Graph>> Run() {
    for (int i = 0; i < training_.nodes_size(); ++i) {
      const proto::NodeDef& node = training_.nodes(i);
      for (int k = 0; k < node.outputs_size(); ++k) producer_[node.outputs(k).id()] = {i, k};
    }
    LS_ASSIGN_OR_RETURN(int logits, FindLogits());
    const std::vector<bool> needed = Ancestors(logits);
    for (int i = 0; i < training_.nodes_size(); ++i) {
      if (needed[i]) LS_RETURN_IF_ERROR(Translate(training_.nodes(i)));
    }
    graph_->AddOutput("logits", mapped_.at(logits), OutputKind::kResult);
    LS_RETURN_IF_ERROR(VerifyGraph(*graph_));
    return std::move(graph_);
  }

 private:
  // The logits are the input of the loss that is not the labels: the net's output.
  absl::StatusOr<int> FindLogits() const {
    for (const proto::GraphOutput& output : training_.outputs()) {
      if (output.name() != kLoss) continue;
      const proto::NodeDef& loss = training_.nodes(producer_.at(output.value()).first);
      if (loss.inputs_size() == 2) {
        for (int i = 0; i < 2; ++i) {
          const proto::NodeDef& other = training_.nodes(producer_.at(loss.inputs(1 - i)).first);
          if (IsInput(other) && other.name() == kLabels) return loss.inputs(i);
        }
      }
      return absl::InvalidArgumentError(
          absl::StrCat("the graph's loss comes from ", Describe(loss),
                       ", which does not read (logits, labels): no net output to export"));
    }
    return absl::InvalidArgumentError("the graph has no 'loss' output: not a training graph");
  }

  // Nodes the value depends on, by position.
  std::vector<bool> Ancestors(int value) const {
    std::vector<bool> needed(training_.nodes_size(), false);
    std::vector<int> stack = {value};
    while (!stack.empty()) {
      const int node = producer_.at(stack.back()).first;
      stack.pop_back();
      if (needed[node]) continue;
      needed[node] = true;
      for (int input : training_.nodes(node).inputs()) stack.push_back(input);
    }
    return needed;
  }

  absl::Status Translate(const proto::NodeDef& node) {
    if (IsInput(node)) return TranslateInput(node);
    absl::StatusOr<const OpDef*> op = OpRegistry::Global().Find(node.op());
    if (!op.ok() || !(*op)->inference_form().has_value()) {
      return absl::UnimplementedError(
          absl::StrCat("cannot export ", Describe(node), ": op ", node.op(),
                       " has no inference form (ops with one: ", OpsWithInferenceForm(), ")"));
    }
    const InferenceForm& form = *(*op)->inference_form();
    std::vector<Value*> inputs;
    for (int id : node.inputs()) {
      auto input = mapped_.find(id);
      if (input == mapped_.end()) {
        return absl::UnimplementedError(absl::StrCat("cannot export ", Describe(node),
                                                     ": it reads %", id,
                                                     ", a training-only output of another node"));
      }
      inputs.push_back(input->second);
    }
    Value* y = inputs.empty() ? nullptr : inputs[0];
    if (!form.ops.empty()) {
      Attrs attrs;
      for (const auto& [name, value] : node.attrs()) {
        if (!absl::c_linear_search(form.training_only_attrs, name)) {
          attrs.Set(name, AttrFromProto(value));
        }
      }
      // "layer1.0.bn1/BatchNormRelu_12" keeps its layer path: "layer1.0.bn1/".
      const size_t slash = node.name().rfind('/');
      b_.SetNamePrefix(slash == std::string::npos ? "" : node.name().substr(0, slash + 1));
      y = b_.Op1(form.ops[0], std::move(inputs), std::move(attrs));
      for (size_t k = 1; k < form.ops.size(); ++k) y = b_.Op1(form.ops[k], {y});
      LS_RETURN_IF_ERROR(Annotate(b_.status(), absl::StrCat("exporting ", Describe(node))));
    }
    // Only the first output (y) exists at inference: the rest are saved batch statistics,
    // running-average updates and argmax or ReLU masks for the backward.
    mapped_[node.outputs(0).id()] = y;
    return absl::OkStatus();
  }

  absl::Status TranslateInput(const proto::NodeDef& node) {
    const proto::ValueInfo& out = node.outputs(0);
    auto role = node.attrs().find("role");
    const std::string r = role == node.attrs().end() ? "" : role->second.s();
    if (out.dtype() != DTypeName(DType::kF32)) {
      return absl::UnimplementedError(absl::StrCat("cannot export ", Describe(node),
                                                   ": its dtype is ", out.dtype(),
                                                   ", and only f32 nets export"));
    }
    Shape shape(out.dims().begin(), out.dims().end());
    Value* value = nullptr;
    if (r == InputRoleName(InputRole::kData) && node.name() == kImages && shape.size() == 4) {
      shape[0] = batch_size_;
      value = b_.Input(node.name(), shape);
    } else if (r == InputRoleName(InputRole::kParameter)) {
      value = b_.Parameter(node.name(), shape);
    } else if (r == InputRoleName(InputRole::kState)) {
      value = b_.State(node.name(), shape);
    } else {
      return absl::UnimplementedError(absl::StrCat(
          "cannot export ", Describe(node), ": the net reads the ", r,
          " input, but an exported net reads only 'images' (N, C, H, W) and its weights"));
    }
    LS_RETURN_IF_ERROR(b_.status());
    mapped_[out.id()] = value;
    return absl::OkStatus();
  }

  const proto::GraphDef& training_;
  int64_t batch_size_;
  std::unique_ptr<Graph> graph_;
  Builder b_;
  std::map<int, std::pair<int, int>> producer_;  // value id -> (node position, output index)
  std::map<int, Value*> mapped_;                 // training value id -> inference value
};

}  // namespace

absl::StatusOr<std::string> GraphMetaBeside(const std::string& ckpt_path) {
  const std::filesystem::path path(ckpt_path);
  std::optional<ckpt::ParsedName> name = ckpt::ParseCheckpointFileName(path.filename().string());
  if (!name.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        ckpt_path, " is not named {prefix}_{rank}-{epoch}_{step}.ckpt: pass its graph .meta"));
  }
  return (path.parent_path() / ckpt::GraphMetaFileName(name->prefix, name->rank)).string();
}

absl::StatusOr<std::unique_ptr<Graph>> DeriveInferenceGraph(const proto::GraphDef& training,
                                                            int64_t batch_size) {
  if (batch_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch size must be positive, got ", batch_size));
  }
  return Deriver(training, batch_size).Run();
}

}  // namespace lockstep::inference
