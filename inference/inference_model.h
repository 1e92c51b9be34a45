#pragma once

// The inference graph of a trained model, derived from its checkpoint and the graph .meta that
// travels with it, as a practitioner deploys a MindSpore or PyTorch model: the forward pass alone
// (no backward, optimizer, AllReduce or loss), batch norm in inference mode on the saved running
// statistics, and the fused training kernels (BatchNormRelu, AddRelu, MaxPoolWithArgmax) and
// layout reorders written back as the plain ops they stand for.
//
// Why the .meta and not the model's name: the .meta holds the whole compiled training graph, so
// any net built from Lockstep's layers (a user's own, not only the named models) exports, and a
// checkpoint whose tensors do not fit that graph is caught by name and shape.
//
//   LS_ASSIGN_OR_RETURN(InferenceModel model, LoadInferenceModel(ckpt, meta, {.batch_size = 8}));
//   LS_ASSIGN_OR_RETURN(Tensor logits, RunInference(model, images));  // inference/run.h

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "core/status.h"
#include "core/tensor.h"
#include "graph/graph.h"
#include "graph/graph.pb.h"

namespace lockstep::inference {

struct InferenceModel {
  std::string name;  // the checkpoint prefix ("resnet8"), the ONNX graph's name
  // Data input "images" (N, C, H, W) f32, output "logits" (N, classes); plain ops only.
  std::unique_ptr<Graph> graph;
  // A plain f32 value for every parameter and state input of `graph`, by input name.
  std::map<std::string, Tensor> weights;
  Shape image_shape;  // (C, H, W)
  int64_t classes = 0;
};

struct LoadOptions {
  int64_t batch_size = 1;  // N of the graph (the ONNX file's batch dimension is dynamic)
  // Fold each batch norm into the convolution before it (FoldBatchNorm).
  bool fold_batch_norm = true;
};

// The graph .meta written beside checkpoint `ckpt_path`: "{prefix}_{rank}-graph.meta".
absl::StatusOr<std::string> GraphMetaBeside(const std::string& ckpt_path);

// Derives the inference graph from a training graph .meta (see above). Ops without an
// inference form, and nets that do not end in a loss of (logits, labels), fail naming the node.
absl::StatusOr<std::unique_ptr<Graph>> DeriveInferenceGraph(const proto::GraphDef& training,
                                                            int64_t batch_size);

// Reads the checkpoint (its CRC required) and the .meta, derives the graph and loads its weights;
// a checkpoint that does not hold every parameter of the .meta with its shape fails naming it.
absl::StatusOr<InferenceModel> LoadInferenceModel(const std::string& ckpt_path,
                                                  const std::string& meta_path,
                                                  const LoadOptions& options = {});

}  // namespace lockstep::inference
