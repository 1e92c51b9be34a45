#pragma once

#include <functional>
#include <string>

#include "train/layers.h"

namespace lockstep::train {

// Adds the nodes from logits (N, classes) f32 and labels (N) i32 to a scalar loss.
struct Loss {
  std::string name;
  std::function<Value*(const NetContext& ctx, Value* logits, Value* labels)> build;
};

// Softmax cross-entropy with sparse labels, the mean over the batch.
Loss SoftmaxCrossEntropy();

}  // namespace lockstep::train
