#include <cfloat>

#include "ops/cuda/device_util.cuh"
#include "ops/cuda/pool_kernels.h"

namespace lockstep::cuda {

using math::PoolGeometry;

namespace {

// Output element i as (plane, oh, ow), plane = n * C + c.
struct OutputIndex {
  int64_t plane, oh, ow;
  __device__ OutputIndex(int64_t i, const PoolGeometry& g)
      : plane(i / (g.oh * g.ow)), oh(i / g.ow % g.oh), ow(i % g.ow) {}
};

struct MaxPoolForward {
  const float* x;
  PoolGeometry g;
  float* y;
  int32_t* argmax;
  __device__ void operator()(int64_t i) const {
    const OutputIndex o(i, g);
    const float* plane = x + o.plane * g.h * g.w;
    float best = -FLT_MAX;
    int32_t where = -1;
    for (int kh = 0; kh < g.kh; ++kh) {
      const int64_t ih = o.oh * g.sh - g.ph + kh;
      if (ih < 0 || ih >= g.h) continue;
      for (int kw = 0; kw < g.kw; ++kw) {
        const int64_t iw = o.ow * g.sw - g.pw + kw;
        if (iw < 0 || iw >= g.w) continue;
        const float v = plane[ih * g.w + iw];
        if (where < 0 || v > best) {  // strictly greater: the first maximum stays
          best = v;
          where = kh * g.kw + kw;
        }
      }
    }
    y[i] = best;
    if (argmax != nullptr) argmax[i] = where;
  }
};

// Input element i as (plane, ih, iw), and the outputs whose windows cover it.
struct InputIndex {
  int64_t plane, ih, iw, oh0, oh1, ow0, ow1;
  __device__ InputIndex(int64_t i, const PoolGeometry& g)
      : plane(i / (g.h * g.w)), ih(i / g.w % g.h), iw(i % g.w) {
    math::CoveringOutputs(ih, g.kh, g.sh, g.ph, g.oh, &oh0, &oh1);
    math::CoveringOutputs(iw, g.kw, g.sw, g.pw, g.ow, &ow0, &ow1);
  }
};

struct MaxPoolBackward {
  const float* dy;
  const int32_t* argmax;
  PoolGeometry g;
  float* dx;
  __device__ void operator()(int64_t i) const {
    const InputIndex in(i, g);
    float sum = 0.0f;
    for (int64_t oh = in.oh0; oh <= in.oh1; ++oh) {
      for (int64_t ow = in.ow0; ow <= in.ow1; ++ow) {
        const int64_t o = (in.plane * g.oh + oh) * g.ow + ow;
        const int32_t here = static_cast<int32_t>((in.ih - (oh * g.sh - g.ph)) * g.kw +
                                                  (in.iw - (ow * g.sw - g.pw)));
        if (argmax[o] == here) sum += dy[o];
      }
    }
    dx[i] = sum;
  }
};

struct AvgPoolForward {
  const float* x;
  PoolGeometry g;
  float* y;
  __device__ void operator()(int64_t i) const {
    const OutputIndex o(i, g);
    const float* plane = x + o.plane * g.h * g.w;
    float sum = 0.0f;
    for (int kh = 0; kh < g.kh; ++kh) {
      const int64_t ih = o.oh * g.sh - g.ph + kh;
      if (ih < 0 || ih >= g.h) continue;
      for (int kw = 0; kw < g.kw; ++kw) {
        const int64_t iw = o.ow * g.sw - g.pw + kw;
        if (iw >= 0 && iw < g.w) sum += plane[ih * g.w + iw];
      }
    }
    y[i] = sum / static_cast<float>(math::AvgDivisor(g, o.oh, o.ow));
  }
};

struct AvgPoolBackward {
  const float* dy;
  PoolGeometry g;
  float* dx;
  __device__ void operator()(int64_t i) const {
    const InputIndex in(i, g);
    float sum = 0.0f;
    for (int64_t oh = in.oh0; oh <= in.oh1; ++oh) {
      for (int64_t ow = in.ow0; ow <= in.ow1; ++ow) {
        sum += dy[(in.plane * g.oh + oh) * g.ow + ow] /
               static_cast<float>(math::AvgDivisor(g, oh, ow));
      }
    }
    dx[i] = sum;
  }
};

// One thread per plane: planes are small in the networks here (7x7 at the end of ResNet-50).
struct GlobalAvgPoolForward {
  const float* x;
  int64_t plane;
  float* y;
  __device__ void operator()(int64_t p) const {
    float sum = 0.0f;
    for (int64_t k = 0; k < plane; ++k) sum += x[p * plane + k];
    y[p] = sum / static_cast<float>(plane);
  }
};

struct GlobalAvgPoolBackward {
  const float* dy;
  int64_t plane;
  float* dx;
  __device__ void operator()(int64_t i) const { dx[i] = dy[i / plane] / static_cast<float>(plane); }
};

}  // namespace

cudaError_t LaunchMaxPool(const float* x, const PoolGeometry& g, float* y, int32_t* argmax,
                          cudaStream_t stream) {
  return ForEachIndex(g.n * g.c * g.oh * g.ow, stream, MaxPoolForward{x, g, y, argmax});
}

cudaError_t LaunchMaxPoolGrad(const float* dy, const int32_t* argmax, const PoolGeometry& g,
                              float* dx, cudaStream_t stream) {
  return ForEachIndex(g.n * g.c * g.h * g.w, stream, MaxPoolBackward{dy, argmax, g, dx});
}

cudaError_t LaunchAvgPool(const float* x, const PoolGeometry& g, float* y, cudaStream_t stream) {
  return ForEachIndex(g.n * g.c * g.oh * g.ow, stream, AvgPoolForward{x, g, y});
}

cudaError_t LaunchAvgPoolGrad(const float* dy, const PoolGeometry& g, float* dx,
                              cudaStream_t stream) {
  return ForEachIndex(g.n * g.c * g.h * g.w, stream, AvgPoolBackward{dy, g, dx});
}

cudaError_t LaunchGlobalAvgPool(const float* x, int64_t planes, int64_t plane, float* y,
                                cudaStream_t stream) {
  return ForEachIndex(planes, stream, GlobalAvgPoolForward{x, plane, y});
}

cudaError_t LaunchGlobalAvgPoolGrad(const float* dy, int64_t planes, int64_t plane, float* dx,
                                    cudaStream_t stream) {
  return ForEachIndex(planes * plane, stream, GlobalAvgPoolBackward{dy, plane, dx});
}

}  // namespace lockstep::cuda
