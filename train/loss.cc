#include "train/loss.h"

namespace lockstep::train {

Loss SoftmaxCrossEntropy() {
  return {"SoftmaxCrossEntropy", [](const NetContext& ctx, Value* logits, Value* labels) {
            std::vector<Value*> outputs = ctx.Op("SoftmaxCrossEntropy", {logits, labels});
            return outputs.empty() ? nullptr : outputs[0];
          }};
}

}  // namespace lockstep::train
