#include <cfloat>

#include "ops/cuda/device_util.cuh"
#include "ops/cuda/element_type.cuh"
#include "ops/cuda/pool_kernels.h"

namespace lockstep::cuda {

using math::PoolGeometry;

namespace {

// Output element i, in y's storage order, as (n, c, oh, ow).
__device__ inline math::Element4 OutputAt(int64_t i, const PoolGeometry& g) {
  return math::ElementAt(i, g.c, g.oh, g.ow, g.channels_last);
}

// Where element (n, c, h, w) of x or dx is stored, and (n, c, oh, ow) of y or dy.
__device__ inline int64_t InputOffset(const PoolGeometry& g, int64_t n, int64_t c, int64_t h,
                                      int64_t w) {
  return math::ElementOffset(n, c, h, w, g.c, g.h, g.w, g.channels_last);
}
__device__ inline int64_t OutputOffset(const PoolGeometry& g, int64_t n, int64_t c, int64_t oh,
                                       int64_t ow) {
  return math::ElementOffset(n, c, oh, ow, g.c, g.oh, g.ow, g.channels_last);
}
// The argmax is (N, C, OH, OW) whatever the layout of y.
__device__ inline int64_t ArgmaxOffset(const PoolGeometry& g, const math::Element4& o) {
  return math::ElementOffset(o.n, o.c, o.h, o.w, g.c, g.oh, g.ow, /*channels_last=*/false);
}

template <typename T>
struct MaxPoolForward {
  const T* x;
  PoolGeometry g;
  T* y;
  int32_t* argmax;
  __device__ void operator()(int64_t i) const {
    const math::Element4 o = OutputAt(i, g);
    float best = -FLT_MAX;
    int32_t where = -1;
    for (int kh = 0; kh < g.kh; ++kh) {
      const int64_t ih = o.h * g.sh - g.ph + kh;
      if (ih < 0 || ih >= g.h) continue;
      for (int kw = 0; kw < g.kw; ++kw) {
        const int64_t iw = o.w * g.sw - g.pw + kw;
        if (iw < 0 || iw >= g.w) continue;
        const float v = ToF32(x[InputOffset(g, o.n, o.c, ih, iw)]);
        if (where < 0 || v > best) {  // strictly greater: the first maximum stays
          best = v;
          where = kh * g.kw + kw;
        }
      }
    }
    y[i] = FromF32<T>(best);
    if (argmax != nullptr) argmax[ArgmaxOffset(g, o)] = where;
  }
};

// Input element i, in x's storage order, as (n, c, ih, iw), and the outputs whose windows cover
// it.
struct InputIndex {
  math::Element4 at;
  int64_t oh0, oh1, ow0, ow1;
  __device__ InputIndex(int64_t i, const PoolGeometry& g)
      : at(math::ElementAt(i, g.c, g.h, g.w, g.channels_last)) {
    math::CoveringOutputs(at.h, g.kh, g.sh, g.ph, g.oh, &oh0, &oh1);
    math::CoveringOutputs(at.w, g.kw, g.sw, g.pw, g.ow, &ow0, &ow1);
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
        const math::Element4 o = {in.at.n, in.at.c, oh, ow};
        const int32_t here = static_cast<int32_t>((in.at.h - (oh * g.sh - g.ph)) * g.kw +
                                                  (in.at.w - (ow * g.sw - g.pw)));
        if (argmax[ArgmaxOffset(g, o)] == here) {
          sum += ToF32(dy[OutputOffset(g, o.n, o.c, oh, ow)]);
        }
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
    const math::Element4 o = OutputAt(i, g);
    float sum = 0.0f;
    for (int kh = 0; kh < g.kh; ++kh) {
      const int64_t ih = o.h * g.sh - g.ph + kh;
      if (ih < 0 || ih >= g.h) continue;
      for (int kw = 0; kw < g.kw; ++kw) {
        const int64_t iw = o.w * g.sw - g.pw + kw;
        if (iw >= 0 && iw < g.w) sum += ToF32(x[InputOffset(g, o.n, o.c, ih, iw)]);
      }
    }
    y[i] = FromF32<T>(sum / static_cast<float>(math::AvgDivisor(g, o.h, o.w)));
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
        sum += ToF32(dy[OutputOffset(g, in.at.n, in.at.c, oh, ow)]) /
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
