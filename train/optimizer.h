#pragma once

// The Momentum optimizer and learning-rate schedules. A schedule maps the global step (0-based,
// counted over the whole run) to the learning rate the training graph's "lr" input gets before
// that step.

#include <cstdint>
#include <functional>
#include <utility>

namespace lockstep::train {

class LrSchedule {
 public:
  // A constant rate: lets `.lr = 0.1` stand for ConstantLr(0.1).
  LrSchedule(double lr);  // NOLINT(google-explicit-constructor)
  explicit LrSchedule(std::function<double(int64_t step)> fn) : fn_(std::move(fn)) {}
  double operator()(int64_t step) const { return fn_(step); }

 private:
  std::function<double(int64_t)> fn_;
};

LrSchedule ConstantLr(double lr);
// lr * gamma^(step / step_size).
LrSchedule StepLr(double lr, int64_t step_size, double gamma);
// From lr down to min_lr over total_steps along half a cosine, then min_lr.
LrSchedule CosineLr(double lr, int64_t total_steps, double min_lr = 0.0);
// Linear warm-up: step s < warmup_steps gets after(0) * (s + 1) / warmup_steps; later steps get
// after(s - warmup_steps), so `after` starts where the warm-up ends.
LrSchedule WarmupLr(int64_t warmup_steps, LrSchedule after);

// SGD with momentum, as MindSpore's and PyTorch's: g = grad / loss_scale + weight_decay * param;
// moment = momentum * moment + g; param -= lr * (nesterov ? g + momentum * moment : moment).
// Weight decay applies to every parameter.
struct Momentum {
  LrSchedule lr = 0.01;
  double momentum = 0.9;
  double weight_decay = 0.0;
  bool nesterov = false;
  // Every gradient is also divided by it: MindSpore's optimizer loss_scale where the loss was not
  // scaled by as much (a ported Momentum(loss_scale=S) without a loss-scale manager divides its
  // gradients by S). 1 otherwise.
  double gradient_divisor = 1.0;
};

}  // namespace lockstep::train
