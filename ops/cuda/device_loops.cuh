#pragma once

// Device-side building blocks of the own kernels: their launch sizes, grid-stride loops over
// indices or packs of consecutive elements, and a block-wide reduction in a fixed order. Include
// from .cu files only.

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace lockstep::cuda {

// Threads per block of the element-wise kernels, and the blocks that cover n elements with
// grid-stride loops (capped: a loop covers the rest).
inline constexpr int kThreadsPerBlock = 256;
inline unsigned BlocksFor(int64_t n) {
  const int64_t blocks = (n + kThreadsPerBlock - 1) / kThreadsPerBlock;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks > 65535 * 8 ? 65535 * 8 : blocks);
}

template <typename Fn>
__global__ void ForEachIndexKernel(int64_t n, Fn fn) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    fn(i);
  }
}

// Calls fn(i) for every i in [0, n) on `stream`; fn is a functor holding its pointers.
template <typename Fn>
cudaError_t ForEachIndex(int64_t n, cudaStream_t stream, Fn fn) {
  if (n == 0) return cudaSuccess;
  ForEachIndexKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(n, fn);
  return cudaGetLastError();
}

// V consecutive elements read or written as one access (PyTorch's aligned_vector): 16-bit data
// one element a thread leave each warp's loads half a 128-byte line, and too few bytes in flight
// to reach the memory's bandwidth.
template <typename E, int V>
struct alignas(sizeof(E) * V) Pack {
  E at[V];
};

// The word that moves a pack, or a 16-byte part of a larger one, in one access (a pack of 16-bit
// floats, whose assignment is elementwise, would be stored one element at a time).
template <size_t kBytes>
using WordOf = std::conditional_t<
    kBytes == 1, uint8_t,
    std::conditional_t<kBytes == 2, uint16_t,
                       std::conditional_t<kBytes == 4, uint32_t,
                                          std::conditional_t<kBytes == 8, uint64_t, uint4>>>>;
template <typename P>
inline constexpr size_t kWordBytes = sizeof(P) < 16 ? sizeof(P) : 16;

// Elements i .. i + V - 1; data + i must be aligned to the pack (PacksFit).
template <int V, typename E>
__device__ inline Pack<E, V> LoadPack(const E* data, int64_t i) {
  using P = Pack<E, V>;
  using Word = WordOf<kWordBytes<P>>;
  Word words[sizeof(P) / sizeof(Word)];
  for (size_t j = 0; j < sizeof(P) / sizeof(Word); ++j) {
    words[j] = reinterpret_cast<const Word*>(data + i)[j];
  }
  P pack;
  memcpy(&pack, words, sizeof(pack));
  return pack;
}

template <int V, typename E>
__device__ inline void StorePack(E* data, int64_t i, const Pack<E, V>& pack) {
  using P = Pack<E, V>;
  using Word = WordOf<kWordBytes<P>>;
  Word words[sizeof(P) / sizeof(Word)];
  memcpy(words, &pack, sizeof(pack));
  for (size_t j = 0; j < sizeof(P) / sizeof(Word); ++j) {
    reinterpret_cast<Word*>(data + i)[j] = words[j];
  }
}

// Whether every pointer (null ones aside) is aligned to a pack of V of its elements.
template <int V, typename... E>
bool PacksFit(const E*... data) {
  return ((reinterpret_cast<uintptr_t>(data) % (sizeof(E) * V) == 0) && ...);
}

template <int V, typename Fn>
__global__ void ForEachPackKernel(int64_t n, Fn fn) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t packs = n / V;
  for (int64_t p = first; p < packs; p += stride) fn.template Apply<V>(p * V);
  for (int64_t i = packs * V + first; i < n; i += stride) fn.template Apply<1>(i);
}

// Calls fn.Apply<V>(i) for the packs of V elements that fill [0, n) and fn.Apply<1>(i) for the
// rest, V = 8 bytes of T, on `stream`; one element at a time where fn.Fits<V>() says its
// pointers are not aligned to packs.
template <typename T, typename Fn>
cudaError_t ForEachPack(int64_t n, cudaStream_t stream, Fn fn) {
  constexpr int kPack = 8 / sizeof(T);
  if (n == 0) return cudaSuccess;
  if (fn.template Fits<kPack>()) {
    ForEachPackKernel<kPack>
        <<<BlocksFor((n + kPack - 1) / kPack), kThreadsPerBlock, 0, stream>>>(n, fn);
  } else {
    ForEachPackKernel<1><<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(n, fn);
  }
  return cudaGetLastError();
}

// Combines one value per thread of a kThreadsPerBlock-thread block by a tree in shared memory.
// The order of the combinations is fixed, so sums come out the same every run; every thread
// gets the result. All threads of the block must call it.
template <typename T, typename Combine>
__device__ T BlockReduce(T value, Combine combine) {
  __shared__ T partial[kThreadsPerBlock];
  partial[threadIdx.x] = value;
  __syncthreads();
  for (unsigned half = kThreadsPerBlock / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      partial[threadIdx.x] = combine(partial[threadIdx.x], partial[threadIdx.x + half]);
    }
    __syncthreads();
  }
  const T result = partial[0];
  __syncthreads();  // the next call may overwrite partial[0]
  return result;
}

struct SumOf {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};

}  // namespace lockstep::cuda
