#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "graph/pass.h"

namespace lockstep::train {

// Dynamic loss scaling, with MindSpore's DynamicLossScaleManager defaults: the backward is
// seeded with the state input "loss_scale"; after the (reduced) gradients, AllFinite checks
// them for Inf/NaN; every Momentum skips its update when they are not all finite; then
// UpdateLossScale divides the scale by `factor` on overflow and multiplies it by `factor` after
// `window` finite steps in a row, counted in the state "loss_scale_good_steps". Both states are
// saved in checkpoints like any other.
struct DynamicLossScale {
  double initial = 16777216.0;  // 2^24
  double factor = 2.0;
  int64_t window = 2000;
};
inline constexpr char kLossScaleState[] = "loss_scale";
inline constexpr char kLossScaleGoodStepsState[] = "loss_scale_good_steps";
// f32[] graph output of the updating graph: 1 when its gradients were finite and applied.
inline constexpr char kGradientsFiniteOutput[] = "gradients_finite";

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
  // Momentum::gradient_divisor, divided out with the loss scale.
  double gradient_divisor = 1.0;
  // The f32[] data input the caller writes the learning rate into before each step; added
  // when the graph has none.
  std::string lr_input = "lr";
  // Set: dynamic loss scaling; the graph must have the f32[] state kLossScaleState seeding the
  // backward (AutodiffOptions::seeds). Unset: the fixed AutodiffOptions::loss_scale.
  std::optional<DynamicLossScale> dynamic_loss_scale;
};

// Runs after Autodiff (and the data-parallel passes): for every gradient output, linked to its
// parameter p, it adds a state input "moments.<p>" and a Momentum node (p, grad, moment, lr)
// updating p and its moment in place, whose outputs become the graph outputs "update/<p>" and
// "update/moments.<p>" of kind kUpdate. The loss scale is the autodiff seed's
// (PassContext::autodiff.loss_scale): Momentum divides it out. With dynamic loss scaling it adds
// the nodes described at DynamicLossScale. Its options are the ApplyOptimizerOptions in
// PassContext::config.
std::unique_ptr<Pass> CreateApplyOptimizerPass();

// The state input holding a parameter's moment: "moments.<parameter>", as MindSpore names it.
std::string MomentName(const std::string& parameter);

}  // namespace lockstep::train
