#pragma once

// The inference graph as an ONNX model (opset 13, schema and checker from Debian's libonnx):
// input "images" (N, C, H, W) and output "logits" (N, classes) with a dynamic batch dimension N,
// the weights as initializers, and how to prepare an image as metadata_props.

#include <string>
#include <vector>

#include "core/status.h"
#include "inference/inference_model.h"
#include "onnx/onnx_pb.h"

namespace lockstep::inference {

inline constexpr int64_t kOnnxOpset = 13;

// How lockstep-train's validation prepares an image (train::ClassificationTransforms), written
// to the file so that another runtime can feed it the same tensor.
struct Preprocessing {
  int64_t image_size = 0;        // side of the square input
  int64_t resize_shorter = 0;    // bilinear resize of the shorter side, then a centre crop
  std::vector<float> mean, std;  // per channel, on 0..255 pixel values
  std::string channel_order = "RGB";
  std::vector<std::string> class_names;  // by label; empty when not known
};

// lockstep-train's validation transforms for a model of this input size.
Preprocessing ValidationPreprocessing(const InferenceModel& model);

// Fails naming the node and op that ONNX cannot express, or what ONNX's checker rejects.
absl::StatusOr<onnx::ModelProto> ToOnnx(const InferenceModel& model,
                                        const Preprocessing& preprocessing);

// ToOnnx, written atomically (a temporary file renamed): a failure leaves no file behind.
absl::Status ExportOnnx(const InferenceModel& model, const Preprocessing& preprocessing,
                        const std::string& path);

}  // namespace lockstep::inference
