#include "train/optimizer.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace lockstep::train {

LrSchedule::LrSchedule(double lr) : fn_([lr](int64_t) { return lr; }) {}

LrSchedule ConstantLr(double lr) { return LrSchedule(lr); }

LrSchedule StepLr(double lr, int64_t step_size, double gamma) {
  return LrSchedule([=](int64_t step) {
    return lr * std::pow(gamma, static_cast<double>(step / std::max<int64_t>(step_size, 1)));
  });
}

LrSchedule CosineLr(double lr, int64_t total_steps, double min_lr) {
  return LrSchedule([=](int64_t step) {
    const double progress = std::min(
        1.0, static_cast<double>(step) / static_cast<double>(std::max<int64_t>(total_steps, 1)));
    return min_lr + 0.5 * (lr - min_lr) * (1.0 + std::cos(std::numbers::pi * progress));
  });
}

LrSchedule WarmupLr(int64_t warmup_steps, LrSchedule after) {
  return LrSchedule([=](int64_t step) {
    if (step >= warmup_steps) return after(step - warmup_steps);
    return after(0) * static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
  });
}

}  // namespace lockstep::train
