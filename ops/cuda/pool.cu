#include <cfloat>

#include "ops/cuda/device_util.cuh"
#include "ops/cuda/element_type.cuh"
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

template <typename T>
struct MaxPoolForward {
  const T* x;
  PoolGeometry g;
  T* y;
  int32_t* argmax;
  __device__ void operator()(int64_t i) const {
    const OutputIndex o(i, g);
    const T* plane = x + o.plane * g.h * g.w;
    float best = -FLT_MAX;
    int32_t where = -1;
    for (int kh = 0; kh < g.kh; ++kh) {
      const int64_t ih = o.oh * g.sh - g.ph + kh;
      if (ih < 0 || ih >= g.h) continue;
      for (int kw = 0; kw < g.kw; ++kw) {
        const int64_t iw = o.ow * g.sw - g.pw + kw;
        if (iw < 0 || iw >= g.w) continue;
        const float v = ToF32(plane[ih * g.w + iw]);
        if (where < 0 || v > best) {  // strictly greater: the first maximum stays
          best = v;
          where = kh * g.kw + kw;
        }
      }
    }
    y[i] = FromF32<T>(best);
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

template <typename T>
struct MaxPoolBackward {
  const T* dy;
  const int32_t* argmax;
  PoolGeometry g;
  T* dx;
  __device__ void operator()(int64_t i) const {
    const InputIndex in(i, g);
    float sum = 0.0f;
    for (int64_t oh = in.oh0; oh <= in.oh1; ++oh) {
      for (int64_t ow = in.ow0; ow <= in.ow1; ++ow) {
        const int64_t o = (in.plane * g.oh + oh) * g.ow + ow;
        const int32_t here = static_cast<int32_t>((in.ih - (oh * g.sh - g.ph)) * g.kw +
                                                  (in.iw - (ow * g.sw - g.pw)));
        if (argmax[o] == here) sum += ToF32(dy[o]);
      }
    }
    dx[i] = FromF32<T>(sum);
  }
};

template <typename T>
struct AvgPoolForward {
  const T* x;
  PoolGeometry g;
  T* y;
  __device__ void operator()(int64_t i) const {
    const OutputIndex o(i, g);
    const T* plane = x + o.plane * g.h * g.w;
    float sum = 0.0f;
    for (int kh = 0; kh < g.kh; ++kh) {
      const int64_t ih = o.oh * g.sh - g.ph + kh;
      if (ih < 0 || ih >= g.h) continue;
      for (int kw = 0; kw < g.kw; ++kw) {
        const int64_t iw = o.ow * g.sw - g.pw + kw;
        if (iw >= 0 && iw < g.w) sum += ToF32(plane[ih * g.w + iw]);
      }
    }
    y[i] = FromF32<T>(sum / static_cast<float>(math::AvgDivisor(g, o.oh, o.ow)));
  }
};

template <typename T>
struct AvgPoolBackward {
  const T* dy;
  PoolGeometry g;
  T* dx;
  __device__ void operator()(int64_t i) const {
    const InputIndex in(i, g);
    float sum = 0.0f;
    for (int64_t oh = in.oh0; oh <= in.oh1; ++oh) {
      for (int64_t ow = in.ow0; ow <= in.ow1; ++ow) {
        sum += ToF32(dy[(in.plane * g.oh + oh) * g.ow + ow]) /
               static_cast<float>(math::AvgDivisor(g, oh, ow));
      }
    }
    dx[i] = FromF32<T>(sum);
  }
};

// One thread per plane: planes are small in the networks here (7x7 at the end of ResNet-50).
template <typename T>
struct GlobalAvgPoolForward {
  const T* x;
  int64_t plane;
  T* y;
  __device__ void operator()(int64_t p) const {
    float sum = 0.0f;
    for (int64_t k = 0; k < plane; ++k) sum += ToF32(x[p * plane + k]);
    y[p] = FromF32<T>(sum / static_cast<float>(plane));
  }
};

template <typename T>
struct GlobalAvgPoolBackward {
  const T* dy;
  int64_t plane;
  T* dx;
  __device__ void operator()(int64_t i) const {
    dx[i] = FromF32<T>(ToF32(dy[i / plane]) / static_cast<float>(plane));
  }
};

}  // namespace

template <typename T>
cudaError_t LaunchMaxPool(const T* x, const PoolGeometry& g, T* y, int32_t* argmax,
                          cudaStream_t stream) {
  return ForEachIndex(g.n * g.c * g.oh * g.ow, stream, MaxPoolForward<T>{x, g, y, argmax});
}

template <typename T>
cudaError_t LaunchMaxPoolGrad(const T* dy, const int32_t* argmax, const PoolGeometry& g, T* dx,
                              cudaStream_t stream) {
  return ForEachIndex(g.n * g.c * g.h * g.w, stream, MaxPoolBackward<T>{dy, argmax, g, dx});
}

template <typename T>
cudaError_t LaunchAvgPool(const T* x, const PoolGeometry& g, T* y, cudaStream_t stream) {
  return ForEachIndex(g.n * g.c * g.oh * g.ow, stream, AvgPoolForward<T>{x, g, y});
}

template <typename T>
cudaError_t LaunchAvgPoolGrad(const T* dy, const PoolGeometry& g, T* dx, cudaStream_t stream) {
  return ForEachIndex(g.n * g.c * g.h * g.w, stream, AvgPoolBackward<T>{dy, g, dx});
}

template <typename T>
cudaError_t LaunchGlobalAvgPool(const T* x, int64_t planes, int64_t plane, T* y,
                                cudaStream_t stream) {
  return ForEachIndex(planes, stream, GlobalAvgPoolForward<T>{x, plane, y});
}

template <typename T>
cudaError_t LaunchGlobalAvgPoolGrad(const T* dy, int64_t planes, int64_t plane, T* dx,
                                    cudaStream_t stream) {
  return ForEachIndex(planes * plane, stream, GlobalAvgPoolBackward<T>{dy, plane, dx});
}

#define LS_INSTANTIATE_POOL(T)                                                                   \
  template cudaError_t LaunchMaxPool(const T*, const PoolGeometry&, T*, int32_t*, cudaStream_t); \
  template cudaError_t LaunchMaxPoolGrad(const T*, const int32_t*, const PoolGeometry&, T*,      \
                                         cudaStream_t);                                          \
  template cudaError_t LaunchAvgPool(const T*, const PoolGeometry&, T*, cudaStream_t);           \
  template cudaError_t LaunchAvgPoolGrad(const T*, const PoolGeometry&, T*, cudaStream_t);       \
  template cudaError_t LaunchGlobalAvgPool(const T*, int64_t, int64_t, T*, cudaStream_t);        \
  template cudaError_t LaunchGlobalAvgPoolGrad(const T*, int64_t, int64_t, T*, cudaStream_t)
LS_FOR_EACH_FLOAT_ELEMENT(LS_INSTANTIATE_POOL);
#undef LS_INSTANTIATE_POOL

}  // namespace lockstep::cuda
