#pragma once

// Runs an inference graph inside Lockstep (forward only, no autodiff), and prepares image files
// for it as lockstep-train's validation does.

#include <memory>
#include <string>
#include <vector>

#include "graph/executor.h"
#include "inference/inference_model.h"

namespace lockstep::inference {

// Compiles `model`'s graph (which it takes) on the CPU and writes its weights.
absl::StatusOr<std::unique_ptr<Executor>> CompileInference(InferenceModel& model);

// Logits (N, classes) of images (N, C, H, W), N being the batch size the graph was built for.
absl::StatusOr<Tensor> Infer(Executor& executor, const Tensor& images);

// Image files decoded and transformed by train::ClassificationTransforms(size, false), stacked
// into (N, 3, size, size); errors name the file.
absl::StatusOr<Tensor> LoadImages(const std::vector<std::string>& paths, int64_t size);

struct Scored {
  int64_t label = 0;
  float logit = 0.0f;
  float probability = 0.0f;  // softmax over the row
};
// The k best classes of each row of logits (N, classes), best first.
std::vector<std::vector<Scored>> TopK(const Tensor& logits, int64_t k);

}  // namespace lockstep::inference
