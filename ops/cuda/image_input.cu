#include "ops/cuda/device_loops.cuh"
#include "ops/cuda/image_input_kernels.h"

namespace lockstep::cuda {
namespace {

// One output element per index: written in order, the uint8 input read with a stride of C.
struct NormalizeImagesFn {
  const uint8_t* nhwc;
  float* nchw;
  int64_t plane;
  math::ImageNormalization n;
  __device__ void operator()(int64_t i) const {
    nchw[i] = math::NormalizedElement(nhwc, i, plane, n);
  }
};

}  // namespace

cudaError_t LaunchNormalizeImages(const uint8_t* nhwc, float* nchw, int64_t total, int64_t plane,
                                  const math::ImageNormalization& n, cudaStream_t stream) {
  return ForEachIndex(total, stream, NormalizeImagesFn{nhwc, nchw, plane, n});
}

}  // namespace lockstep::cuda
