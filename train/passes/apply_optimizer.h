#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "graph/pass.h"

namespace lockstep::train {

struct ApplyOptimizerOptions {
  double momentum = 0.9;
  double weight_decay = 0.0;
  bool nesterov = false;
  // Micro-batches summed into each gradient (gradient accumulation): divided out with the loss
  // scale, so an update sees the mean gradient of the whole batch.
  int64_t accumulation_steps = 1;
  // Data-parallel replicas whose summed gradients an update averages (1 when they are summed):
  // divided out with the loss scale, saving the AllReduce a division pass.
  int64_t replicas = 1;
  // The f32[] data input the caller writes the learning rate into before each step; added
  // when the graph has none.
  std::string lr_input = "lr";
};

// Runs after Autodiff (and the data-parallel passes): for every gradient output, linked to its
// parameter p, it adds a state input "moments.<p>" and a Momentum node (p, grad, moment, lr)
// updating p and its moment in place, whose outputs become the graph outputs "update/<p>" and
// "update/moments.<p>" of kind kUpdate. The loss scale is the autodiff seed's
// (PassContext::autodiff.loss_scale): Momentum divides it out.
std::unique_ptr<Pass> CreateApplyOptimizerPass(const ApplyOptimizerOptions& options);

// The state input holding a parameter's moment: "moments.<parameter>", as MindSpore names it.
std::string MomentName(const std::string& parameter);

}  // namespace lockstep::train
