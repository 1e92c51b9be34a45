#include "inference/run.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/file_io.h"
#include "dataset/transform.h"
#include "graph/compile.h"
#include "train/dataset_source.h"

namespace lockstep::inference {

absl::StatusOr<std::unique_ptr<Executor>> CompileInference(InferenceModel& model) {
  LS_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor,
                      Compile(std::move(model.graph), {.device = Device::CPU()}));
  for (const auto& [name, value] : model.weights) {
    LS_RETURN_IF_ERROR(executor->WriteInput(name, value));
  }
  return executor;
}

absl::StatusOr<Tensor> Infer(Executor& executor, const Tensor& images) {
  LS_ASSIGN_OR_RETURN(Tensor input, executor.Input("images"));
  if (images.shape() != input.shape() || images.dtype() != DType::kF32) {
    return absl::InvalidArgumentError(
        absl::StrCat("images must be f32", ShapeToString(input.shape()), ", got ",
                     DTypeName(images.dtype()), ShapeToString(images.shape())));
  }
  input.CopyFrom(images);
  LS_RETURN_IF_ERROR(executor.Run());
  return executor.ReadOutput("logits");
}

absl::StatusOr<Tensor> LoadImages(const std::vector<std::string>& paths, int64_t size) {
  const std::vector<dataset::TransformPtr> steps = train::ClassificationTransforms(size, false);
  Tensor batch = Tensor::Empty({static_cast<int64_t>(paths.size()), 3, size, size}, DType::kF32);
  const size_t image_bytes = batch.nbytes() / std::max<size_t>(1, paths.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    LS_ASSIGN_OR_RETURN(Tensor x, ReadWholeFileAsTensor(paths[i]));
    for (size_t s = 0; s < steps.size(); ++s) {
      const dataset::Transform* next = s + 1 < steps.size() ? steps[s + 1].get() : nullptr;
      absl::StatusOr<Tensor> y = steps[s]->Apply(
          x, dataset::TransformContext(0, 0, static_cast<int64_t>(i), static_cast<int>(s), next));
      if (!y.ok()) return Annotate(y.status(), paths[i]);
      x = *y;
    }
    if (x.nbytes() != image_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(paths[i], " gives ", ShapeToString(x.shape()),
                                                     ", not (3, ", size, ", ", size, ")"));
    }
    std::memcpy(reinterpret_cast<char*>(batch.data<float>()) + i * image_bytes, x.data<float>(),
                image_bytes);
  }
  return batch;
}

std::vector<std::vector<Scored>> TopK(const Tensor& logits, int64_t k) {
  const int64_t rows = logits.dim(0), classes = logits.dim(1);
  std::vector<std::vector<Scored>> result(rows);
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = logits.data<float>() + r * classes;
    const float max = *std::max_element(row, row + classes);
    double sum = 0.0;
    for (int64_t c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(row[c] - max));
    std::vector<Scored> scored;
    for (int64_t c = 0; c < classes; ++c) {
      scored.push_back({c, row[c], static_cast<float>(std::exp(row[c] - max) / sum)});
    }
    const int64_t top = std::min(k, classes);
    std::partial_sort(scored.begin(), scored.begin() + top, scored.end(),
                      [](const Scored& a, const Scored& b) { return a.logit > b.logit; });
    scored.resize(top);
    result[r] = std::move(scored);
  }
  return result;
}

}  // namespace lockstep::inference
