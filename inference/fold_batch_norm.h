#pragma once

// Folds each inference batch norm into the convolution before it, as deployment tools do:
// y = gamma (conv(x, w) - mean) / sqrt(var + eps) + beta is conv(x, w') + b' with
// w'[o] = w[o] s[o], b' = beta - mean s and s = gamma / sqrt(var + eps) (in float64). Applies
// where the convolution's output and weight have no other reader; the weight keeps its name,
// the new bias is named after it ("conv1.weight" -> "conv1.bias").

#include <map>
#include <string>

#include "core/status.h"
#include "core/tensor.h"
#include "graph/graph.h"

namespace lockstep::inference {

// Rewrites `graph` and `weights` (plain f32 values by input name) in place.
absl::Status FoldBatchNorm(Graph* graph, std::map<std::string, Tensor>* weights);

}  // namespace lockstep::inference
