#include "ops/cpu/image_input.h"

#include "ops/image_input_math.h"

namespace lockstep::cpu {

void NormalizeImagesOnHost(const Tensor& images, const Tensor& to, const std::vector<float>& mean,
                           const std::vector<float>& std) {
  const math::ImageNormalization n =
      math::MakeImageNormalization(mean.data(), std.data(), static_cast<int>(images.dim(3)));
  const uint8_t* nhwc = images.data<uint8_t>();
  float* nchw = to.data<float>();
  const int64_t plane = images.dim(1) * images.dim(2);
  const int64_t total = to.numel();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < total; ++i) nchw[i] = math::NormalizedElement(nhwc, i, plane, n);
}

}  // namespace lockstep::cpu
