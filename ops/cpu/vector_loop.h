#pragma once

// ParallelFor for the CPU's own per-element loops (element-wise kernels, float conversions): the
// range splits over OpenMP threads, and each thread's part is compiled for the widest vector ISA
// oneDNN dispatches to (AVX-512, AVX2, or the build's baseline), so DNNL_MAX_CPU_ISA caps both
// alike. The build targets baseline x86-64 (128-bit vectors); there the bf16 rounding, integer
// work, runs 5x slower than with AVX-512.

#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace lockstep::cpu {

enum class VectorIsa { kBaseline, kAvx2, kAvx512 };
// Read once, from oneDNN's effective ISA.
VectorIsa LoopIsa();

template <typename Fn>
[[gnu::target("avx512f,avx512bw,avx512vl,avx512dq")]] void LoopAvx512(int64_t begin, int64_t end,
                                                                      const Fn& fn) {
  for (int64_t i = begin; i < end; ++i) fn(i);
}
template <typename Fn>
[[gnu::target("avx2")]] void LoopAvx2(int64_t begin, int64_t end, const Fn& fn) {
  for (int64_t i = begin; i < end; ++i) fn(i);
}
template <typename Fn>
void LoopBaseline(int64_t begin, int64_t end, const Fn& fn) {
  for (int64_t i = begin; i < end; ++i) fn(i);
}

// Applies fn(i) for i in [0, n), one contiguous part per OpenMP thread.
template <typename Fn>
void ParallelFor(int64_t n, const Fn& fn) {
  const VectorIsa isa = LoopIsa();
#pragma omp parallel
  {
    const int64_t part = (n + omp_get_num_threads() - 1) / omp_get_num_threads();
    const int64_t begin = std::min(n, part * omp_get_thread_num());
    const int64_t end = std::min(n, begin + part);
    switch (isa) {
      case VectorIsa::kAvx512:
        LoopAvx512(begin, end, fn);
        break;
      case VectorIsa::kAvx2:
        LoopAvx2(begin, end, fn);
        break;
      case VectorIsa::kBaseline:
        LoopBaseline(begin, end, fn);
        break;
    }
  }
}

}  // namespace lockstep::cpu
