#include "train/init.h"

#include <algorithm>
#include <cmath>

namespace lockstep::train {

Initializer Initializer::HeNormal(int64_t fan_out) {
  return Normal(0.0, std::sqrt(2.0 / static_cast<double>(fan_out)));
}

Initializer Initializer::FanInUniform(int64_t fan_in) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  return Uniform(-bound, bound);
}

void Initializer::Fill(const Philox& rng, const Tensor& out) const {
  float* data = out.data<float>();  // any shape
  const int64_t n = out.numel();
  switch (kind) {
    case Kind::kConstant:
      std::fill(data, data + n, static_cast<float>(a));
      return;
    case Kind::kNormal:
      rng.Normal(data, n, static_cast<float>(a), static_cast<float>(b));
      return;
    case Kind::kUniform:
      rng.Uniform(data, n);
      for (int64_t i = 0; i < n; ++i) data[i] = static_cast<float>(a + (b - a) * data[i]);
      return;
  }
}

}  // namespace lockstep::train
