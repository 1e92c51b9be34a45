#pragma once

// The graph of the CUDA batch-norm tests' fused pair: BatchNormRelu on (x, gamma, beta, running
// mean, running variance) and BatchNormReluGrad on dy (input 5), with the outputs both backends
// compute alike (the ReLU mask is each backend's own).

#include <vector>

#include "graph/builder.h"

namespace lockstep::testing {

inline std::vector<Value*> BatchNormReluPair(Builder& b, const std::vector<Value*>& in) {
  std::vector<Value*> forward = b.Op("BatchNormRelu", {in[0], in[1], in[2], in[3], in[4]});
  if (forward.size() != 6) return forward;
  std::vector<Value*> grads =
      b.Op("BatchNormReluGrad", {in[0], in[1], forward[1], forward[2], in[5], forward[5]});
  forward.pop_back();  // the mask
  forward.insert(forward.end(), grads.begin(), grads.end());
  return forward;
}

}  // namespace lockstep::testing
