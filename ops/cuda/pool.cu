#include <cfloat>
#include <cstdint>
#include <limits>

#include "ops/cuda/device_loops.cuh"
#include "ops/cuda/float_conversions.cuh"
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

// A pooling functor (its pointers) with the sizes and window it indexes by: fn(p, sizes, window).
template <typename I, typename Fn>
struct Pooled {
  Fn fn;
  __device__ void operator()(int64_t p) const { fn(static_cast<I>(p), s, g); }
  Sizes<I> s;
  PoolGeometry g;
};

// Each functor below computes pack p of its output, the V elements from i = p * V on: one where
// V is 1, else V channels of one pixel of channels-last data, read and written 16 bytes at a time.
// At one element a thread, the index arithmetic (a dozen integer divisions) made ResNet-50's
// max-pool gradient take 3 ms a step on an H200, 15 times what its bytes take.
template <typename T>
inline constexpr int kChannelPack = 16 / sizeof(T);

template <int V, template <typename, int> class Fn, typename... Args>
cudaError_t ForEachPooledPack(int64_t n, const PoolGeometry& g, cudaStream_t stream, Args... args) {
  if (FitsInt32(g)) {
    return ForEachIndex(n / V, stream,
                        Pooled<int32_t, Fn<int32_t, V>>{{args...}, Sizes<int32_t>(g), g});
  }
  return ForEachIndex(n / V, stream,
                      Pooled<int64_t, Fn<int64_t, V>>{{args...}, Sizes<int64_t>(g), g});
}

// Calls fn(p, sizes, geometry) with Fn<I, V> for every pack p of V elements of the output, n
// elements in all: V = kChannelPack<T> where the data is channels-last, whole packs of channels
// and every pointer in `args` aligned to them, else 1; I the narrowest index type the geometry
// allows.
template <typename T, template <typename, int> class Fn, typename... Args>
cudaError_t ForEachPooled(int64_t n, const PoolGeometry& g, cudaStream_t stream, Args... args) {
  constexpr int kPack = kChannelPack<T>;
  if (g.channels_last && g.c % kPack == 0 && PacksFit<kPack>(args...)) {
    return ForEachPooledPack<kPack, Fn>(n, g, stream, args...);
  }
  return ForEachPooledPack<1, Fn>(n, g, stream, args...);
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
  template <typename I, int V>
  struct Fn {
    const T* x;
    T* y;
    int32_t* argmax;  // like y
    __device__ void operator()(I p, const Sizes<I>& s, const PoolGeometry& g) const {
      const I i = p * V;
      float best[V];
      Pack<int32_t, V> where;
      for (int k = 0; k < V; ++k) {
        best[k] = -FLT_MAX;
        where.at[k] = -1;
      }
      ForEachInWindow(s, g, s.OutputAt(i), [&](I at, int w) {
        const Pack<T, V> xs = LoadPack<V>(x, at);
        for (int k = 0; k < V; ++k) {
          const float v = ToF32(xs.at[k]);
          if (where.at[k] < 0 || v > best[k]) {  // strictly greater: the first maximum stays
            best[k] = v;
            where.at[k] = w;
          }
        }
      });
      Pack<T, V> ys;
      for (int k = 0; k < V; ++k) ys.at[k] = FromF32<T>(best[k]);
      StorePack<V>(y, i, ys);
      if (argmax != nullptr) StorePack<V>(argmax, i, where);
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

// Stores V sums, rounded to T, as elements i .. i + V - 1.
template <typename T, int V>
__device__ void StoreSums(const float (&sum)[V], T* data, int64_t i) {
  Pack<T, V> pack;
  for (int k = 0; k < V; ++k) pack.at[k] = FromF32<T>(sum[k]);
  StorePack<V>(data, i, pack);
}

template <typename T>
struct MaxPoolBackward {
  template <typename I, int V>
  struct Fn {
    const T* dy;
    const int32_t* argmax;  // like dy
    T* dx;
    __device__ void operator()(I p, const Sizes<I>& s, const PoolGeometry& g) const {
      const I i = p * V;
      const math::Element4Of<I> at = s.InputAt(i);
      float sum[V] = {};
      ForEachCoveringOutput(at, s, g, [&](I o, I oh, I ow) {
        const int32_t here =
            static_cast<int32_t>((at.h - (oh * g.sh - g.ph)) * g.kw + (at.w - (ow * g.sw - g.pw)));
        const Pack<int32_t, V> where = LoadPack<V>(argmax, o);
        const Pack<T, V> gs = LoadPack<V>(dy, o);
        for (int k = 0; k < V; ++k) {
          if (where.at[k] == here) sum[k] += ToF32(gs.at[k]);
        }
      });
      StoreSums(sum, dx, i);
    }
  };
};

template <typename T>
struct AvgPoolForward {
  template <typename I, int V>
  struct Fn {
    const T* x;
    T* y;
    __device__ void operator()(I p, const Sizes<I>& s, const PoolGeometry& g) const {
      const I i = p * V;
      const math::Element4Of<I> o = s.OutputAt(i);
      float sum[V] = {};
      ForEachInWindow(s, g, o, [&](I at, int) {
        const Pack<T, V> xs = LoadPack<V>(x, at);
        for (int k = 0; k < V; ++k) sum[k] += ToF32(xs.at[k]);
      });
      const float divisor = static_cast<float>(math::AvgDivisor(g, o.h, o.w));
      for (int k = 0; k < V; ++k) sum[k] /= divisor;
      StoreSums(sum, y, i);
    }
  };
};

template <typename T>
struct AvgPoolBackward {
  template <typename I, int V>
  struct Fn {
    const T* dy;
    T* dx;
    __device__ void operator()(I p, const Sizes<I>& s, const PoolGeometry& g) const {
      const I i = p * V;
      float sum[V] = {};
      ForEachCoveringOutput(s.InputAt(i), s, g, [&](I o, I oh, I ow) {
        const Pack<T, V> gs = LoadPack<V>(dy, o);
        const float divisor = static_cast<float>(math::AvgDivisor(g, oh, ow));
        for (int k = 0; k < V; ++k) sum[k] += ToF32(gs.at[k]) / divisor;
      });
      StoreSums(sum, dx, i);
    }
  };
};

// Plane p = n * C + c of the full-size side (x or dx) starts at element First(p), its elements
// `channels` apart: C in NHWC, 1 in plain storage (planes contiguous).
struct Planes {
  int64_t plane, channels;
  __device__ int64_t First(int64_t p) const {
    return p / channels * plane * channels + p % channels;
  }
  // The plane of element i.
  __device__ int64_t Of(int64_t i) const {
    return i / (plane * channels) * channels + i % channels;
  }
};

Planes PlanesOf(const GlobalPoolGeometry& g) { return {g.plane, g.channels_last ? g.c : 1}; }

// One thread per plane: planes are small in the networks here (7x7 at the end of ResNet-50), and
// neighbouring threads read neighbouring channels in NHWC.
template <typename T>
struct GlobalAvgPoolForward {
  const T* x;
  Planes planes;
  T* y;
  __device__ void operator()(int64_t p) const {
    const int64_t first = planes.First(p);
    float sum = 0.0f;
    for (int64_t k = 0; k < planes.plane; ++k) sum += ToF32(x[first + k * planes.channels]);
    y[p] = FromF32<T>(sum / static_cast<float>(planes.plane));
  }
};

template <typename T>
struct GlobalAvgPoolBackward {
  const T* dy;
  Planes planes;
  T* dx;
  __device__ void operator()(int64_t i) const {
    dx[i] = FromF32<T>(ToF32(dy[planes.Of(i)]) / static_cast<float>(planes.plane));
  }
};

}  // namespace

template <typename T>
cudaError_t LaunchMaxPool(const T* x, const PoolGeometry& g, T* y, int32_t* argmax,
                          cudaStream_t stream) {
  return ForEachPooled<T, MaxPoolForward<T>::template Fn>(g.n * g.c * g.oh * g.ow, g, stream, x, y,
                                                          argmax);
}

template <typename T>
cudaError_t LaunchMaxPoolGrad(const T* dy, const int32_t* argmax, const PoolGeometry& g, T* dx,
                              cudaStream_t stream) {
  return ForEachPooled<T, MaxPoolBackward<T>::template Fn>(g.n * g.c * g.h * g.w, g, stream, dy,
                                                           argmax, dx);
}

template <typename T>
cudaError_t LaunchAvgPool(const T* x, const PoolGeometry& g, T* y, cudaStream_t stream) {
  return ForEachPooled<T, AvgPoolForward<T>::template Fn>(g.n * g.c * g.oh * g.ow, g, stream, x, y);
}

template <typename T>
cudaError_t LaunchAvgPoolGrad(const T* dy, const PoolGeometry& g, T* dx, cudaStream_t stream) {
  return ForEachPooled<T, AvgPoolBackward<T>::template Fn>(g.n * g.c * g.h * g.w, g, stream, dy,
                                                           dx);
}

template <typename T>
cudaError_t LaunchGlobalAvgPool(const T* x, const GlobalPoolGeometry& g, T* y,
                                cudaStream_t stream) {
  return ForEachIndex(g.n * g.c, stream, GlobalAvgPoolForward<T>{x, PlanesOf(g), y});
}

template <typename T>
cudaError_t LaunchGlobalAvgPoolGrad(const T* dy, const GlobalPoolGeometry& g, T* dx,
                                    cudaStream_t stream) {
  return ForEachIndex(g.n * g.c * g.plane, stream, GlobalAvgPoolBackward<T>{dy, PlanesOf(g), dx});
}

#define LS_INSTANTIATE_POOL(T)                                                                     \
  template cudaError_t LaunchMaxPool(const T*, const PoolGeometry&, T*, int32_t*, cudaStream_t);   \
  template cudaError_t LaunchMaxPoolGrad(const T*, const int32_t*, const PoolGeometry&, T*,        \
                                         cudaStream_t);                                            \
  template cudaError_t LaunchAvgPool(const T*, const PoolGeometry&, T*, cudaStream_t);             \
  template cudaError_t LaunchAvgPoolGrad(const T*, const PoolGeometry&, T*, cudaStream_t);         \
  template cudaError_t LaunchGlobalAvgPool(const T*, const GlobalPoolGeometry&, T*, cudaStream_t); \
  template cudaError_t LaunchGlobalAvgPoolGrad(const T*, const GlobalPoolGeometry&, T*,            \
                                               cudaStream_t)
LS_FOR_EACH_FLOAT_ELEMENT(LS_INSTANTIATE_POOL);
#undef LS_INSTANTIATE_POOL

}  // namespace lockstep::cuda
