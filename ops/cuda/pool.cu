#include <cfloat>
#include <cstdint>
#include <limits>

#include "ops/cuda/device_util.cuh"
#include "ops/cuda/element_type.cuh"
#include "ops/cuda/pool_kernels.h"

namespace lockstep::cuda {

using math::PoolGeometry;

namespace {

// The sizes the index arithmetic uses, in I (ops/pool_math.h): int32_t where every element of x
// and y has a 32-bit index, as in ResNet-50 at batch 256.
template <typename I>
struct Sizes {
  I c, h, w, oh, ow;
  bool channels_last;
  explicit Sizes(const PoolGeometry& g)
      : c(static_cast<I>(g.c)),
        h(static_cast<I>(g.h)),
        w(static_cast<I>(g.w)),
        oh(static_cast<I>(g.oh)),
        ow(static_cast<I>(g.ow)),
        channels_last(g.channels_last) {}
  // Output element i, in y's storage order, as (n, c, oh, ow); input element i, in x's, as
  // (n, c, ih, iw).
  __device__ math::Element4Of<I> OutputAt(I i) const {
    return math::ElementAt(i, c, oh, ow, channels_last);
  }
  __device__ math::Element4Of<I> InputAt(I i) const {
    return math::ElementAt(i, c, h, w, channels_last);
  }
  // Where element (n, c, h, w) of x or dx is stored, and (n, c, oh, ow) of y, dy or the argmax.
  __device__ I InputOffset(I n, I ci, I hi, I wi) const {
    return math::ElementOffset(n, ci, hi, wi, c, h, w, channels_last);
  }
  __device__ I OutputOffset(I n, I ci, I ohi, I owi) const {
    return math::ElementOffset(n, ci, ohi, owi, c, oh, ow, channels_last);
  }
};

bool FitsInt32(const PoolGeometry& g) {
  const int64_t most = std::numeric_limits<int32_t>::max();
  return g.n * g.c * g.h * g.w <= most && g.n * g.c * g.oh * g.ow <= most;
}

// A pooling functor (its pointers) with the sizes and window it indexes by: fn(i, sizes, window).
template <typename I, typename Fn>
struct Pooled {
  Fn fn;
  __device__ void operator()(int64_t i) const { fn(static_cast<I>(i), s, g); }
  Sizes<I> s;
  PoolGeometry g;
};

// Calls fn(i, sizes, geometry) for every i in [0, n) with Fn<I>, I the narrowest index type the
// geometry allows.
template <template <typename> class Fn, typename... Args>
cudaError_t ForEachPooled(int64_t n, const PoolGeometry& g, cudaStream_t stream, Args... args) {
  if (FitsInt32(g)) {
    return ForEachIndex(n, stream, Pooled<int32_t, Fn<int32_t>>{{args...}, Sizes<int32_t>(g), g});
  }
  return ForEachIndex(n, stream, Pooled<int64_t, Fn<int64_t>>{{args...}, Sizes<int64_t>(g), g});
}

// Calls visit(offset of x, window index kh * KW + kw) for each input inside output o's window,
// in row-major order.
template <typename I, typename Visit>
__device__ void ForEachInWindow(const Sizes<I>& s, const PoolGeometry& g,
                                const math::Element4Of<I>& o, Visit visit) {
  for (int kh = 0; kh < g.kh; ++kh) {
    const I ih = o.h * g.sh - g.ph + kh;
    if (ih < 0 || ih >= s.h) continue;
    for (int kw = 0; kw < g.kw; ++kw) {
      const I iw = o.w * g.sw - g.pw + kw;
      if (iw >= 0 && iw < s.w) visit(s.InputOffset(o.n, o.c, ih, iw), kh * g.kw + kw);
    }
  }
}

template <typename T>
struct MaxPoolForward {
  template <typename I>
  struct Fn {
    const T* x;
    T* y;
    int32_t* argmax;  // like y
    __device__ void operator()(I i, const Sizes<I>& s, const PoolGeometry& g) const {
      const math::Element4Of<I> o = s.OutputAt(i);
      float best = -FLT_MAX;
      int32_t where = -1;
      ForEachInWindow(s, g, o, [&](I at, int k) {
        const float v = ToF32(x[at]);
        if (where < 0 || v > best) {  // strictly greater: the first maximum stays
          best = v;
          where = k;
        }
      });
      y[i] = FromF32<T>(best);
      if (argmax != nullptr) argmax[i] = where;
    }
  };
};

// Calls visit(offset of y, oh, ow) for each output whose window covers input element `at`.
template <typename I, typename Visit>
__device__ void ForEachCoveringOutput(const math::Element4Of<I>& at, const Sizes<I>& s,
                                      const PoolGeometry& g, Visit visit) {
  I oh0, oh1, ow0, ow1;
  math::CoveringOutputs(at.h, g.kh, g.sh, g.ph, s.oh, &oh0, &oh1);
  math::CoveringOutputs(at.w, g.kw, g.sw, g.pw, s.ow, &ow0, &ow1);
  for (I oh = oh0; oh <= oh1; ++oh) {
    for (I ow = ow0; ow <= ow1; ++ow) visit(s.OutputOffset(at.n, at.c, oh, ow), oh, ow);
  }
}

template <typename T>
struct MaxPoolBackward {
  template <typename I>
  struct Fn {
    const T* dy;
    const int32_t* argmax;  // like dy
    T* dx;
    __device__ void operator()(I i, const Sizes<I>& s, const PoolGeometry& g) const {
      const math::Element4Of<I> at = s.InputAt(i);
      float sum = 0.0f;
      ForEachCoveringOutput(at, s, g, [&](I o, I oh, I ow) {
        const int32_t here =
            static_cast<int32_t>((at.h - (oh * g.sh - g.ph)) * g.kw + (at.w - (ow * g.sw - g.pw)));
        if (argmax[o] == here) sum += ToF32(dy[o]);
      });
      dx[i] = FromF32<T>(sum);
    }
  };
};

template <typename T>
struct AvgPoolForward {
  template <typename I>
  struct Fn {
    const T* x;
    T* y;
    __device__ void operator()(I i, const Sizes<I>& s, const PoolGeometry& g) const {
      const math::Element4Of<I> o = s.OutputAt(i);
      float sum = 0.0f;
      ForEachInWindow(s, g, o, [&](I at, int) { sum += ToF32(x[at]); });
      y[i] = FromF32<T>(sum / static_cast<float>(math::AvgDivisor(g, o.h, o.w)));
    }
  };
};

template <typename T>
struct AvgPoolBackward {
  template <typename I>
  struct Fn {
    const T* dy;
    T* dx;
    __device__ void operator()(I i, const Sizes<I>& s, const PoolGeometry& g) const {
      float sum = 0.0f;
      ForEachCoveringOutput(s.InputAt(i), s, g, [&](I o, I oh, I ow) {
        sum += ToF32(dy[o]) / static_cast<float>(math::AvgDivisor(g, oh, ow));
      });
      dx[i] = FromF32<T>(sum);
    }
  };
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
  return ForEachPooled<MaxPoolForward<T>::template Fn>(g.n * g.c * g.oh * g.ow, g, stream, x, y,
                                                       argmax);
}

template <typename T>
cudaError_t LaunchMaxPoolGrad(const T* dy, const int32_t* argmax, const PoolGeometry& g, T* dx,
                              cudaStream_t stream) {
  return ForEachPooled<MaxPoolBackward<T>::template Fn>(g.n * g.c * g.h * g.w, g, stream, dy,
                                                        argmax, dx);
}

template <typename T>
cudaError_t LaunchAvgPool(const T* x, const PoolGeometry& g, T* y, cudaStream_t stream) {
  return ForEachPooled<AvgPoolForward<T>::template Fn>(g.n * g.c * g.oh * g.ow, g, stream, x, y);
}

template <typename T>
cudaError_t LaunchAvgPoolGrad(const T* dy, const PoolGeometry& g, T* dx, cudaStream_t stream) {
  return ForEachPooled<AvgPoolBackward<T>::template Fn>(g.n * g.c * g.h * g.w, g, stream, dy, dx);
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
