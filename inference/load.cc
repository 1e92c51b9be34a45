// LoadInferenceModel: the checkpoint's tensors matched against the .meta's graph, by name, shape
// and dtype, before they become the inference graph's weights.

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "ckpt/graph_meta.h"
#include "ckpt/naming.h"
#include "ckpt/reader.h"
#include "inference/fold_batch_norm.h"
#include "inference/inference_model.h"

namespace lockstep::inference {
namespace {

// Every parameter of the training graph must be in the checkpoint with its shape: otherwise
// the checkpoint belongs to another model (or another size of this one).
absl::Status CheckParameters(const proto::GraphDef& meta, const ckpt::CheckpointData& data,
                             const std::string& meta_path) {
  for (const proto::Parameter& parameter : meta.parameters()) {
    const ckpt::Entry* entry = data.Find(parameter.name());
    const Shape shape(parameter.dims().begin(), parameter.dims().end());
    if (entry == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(data.path, " does not fit the graph of ",
                                                     meta_path, ": it has no '", parameter.name(),
                                                     "' (", ShapeToString(shape), ")"));
    }
    if (entry->shape != shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          data.path, " does not fit the graph of ", meta_path, ": '", parameter.name(), "' is ",
          ShapeToString(entry->shape), " there, ", ShapeToString(shape), " in the graph"));
    }
  }
  return absl::OkStatus();
}

// The plain f32 value of each parameter and state input of `graph`.
absl::StatusOr<std::map<std::string, Tensor>> LoadWeights(const Graph& graph,
                                                          const ckpt::CheckpointData& data) {
  std::map<std::string, Tensor> weights;
  for (InputRole role : {InputRole::kParameter, InputRole::kState}) {
    for (const Node* input : graph.InputNodes(role)) {
      const ckpt::Entry* entry = data.Find(input->name);
      const TensorType& type = input->output()->type;
      if (entry == nullptr || entry->shape != type.shape || entry->type->dtype != type.dtype) {
        return absl::InvalidArgumentError(
            absl::StrCat(data.path, " has no ", TypeToString(type), " '", input->name, "' for ",
                         input->Describe(),
                         entry == nullptr ? ""
                                          : absl::StrCat(" (it holds a ", entry->type->name, " ",
                                                         ShapeToString(entry->shape), ")")));
      }
      LS_ASSIGN_OR_RETURN(weights[input->name], entry->ToTensor());
    }
  }
  return weights;
}

std::string ModelName(const std::string& ckpt_path) {
  const std::string file = std::filesystem::path(ckpt_path).filename().string();
  std::optional<ckpt::ParsedName> name = ckpt::ParseCheckpointFileName(file);
  return name.has_value() ? name->prefix : std::filesystem::path(file).stem().string();
}

}  // namespace

absl::StatusOr<InferenceModel> LoadInferenceModel(const std::string& ckpt_path,
                                                  const std::string& meta_path,
                                                  const LoadOptions& options) {
  LS_ASSIGN_OR_RETURN(ckpt::CheckpointData data, ckpt::ReadCheckpoint(ckpt_path));
  LS_ASSIGN_OR_RETURN(proto::GraphDef meta, ckpt::ReadGraphMeta(meta_path));
  LS_RETURN_IF_ERROR(CheckParameters(meta, data, meta_path));
  InferenceModel model;
  model.name = ModelName(ckpt_path);
  absl::StatusOr<std::unique_ptr<Graph>> graph = DeriveInferenceGraph(meta, options.batch_size);
  if (!graph.ok()) return Annotate(graph.status(), meta_path);
  model.graph = std::move(*graph);
  LS_ASSIGN_OR_RETURN(model.weights, LoadWeights(*model.graph, data));
  const Shape& images = model.graph->FindInput("images")->output()->shape();
  model.image_shape = Shape(images.begin() + 1, images.end());
  model.classes = model.graph->FindOutput("logits")->value->shape().back();
  if (options.fold_batch_norm) {
    LS_RETURN_IF_ERROR(FoldBatchNorm(model.graph.get(), &model.weights));
  }
  return model;
}

}  // namespace lockstep::inference
