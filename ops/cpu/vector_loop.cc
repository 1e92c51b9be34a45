#include "ops/cpu/vector_loop.h"

#include <oneapi/dnnl/dnnl.h>

namespace lockstep::cpu {

VectorIsa LoopIsa() {
  static const VectorIsa isa = [] {
    // Feature masks, tested bit by bit (cpu_layouts.cc says why).
    const unsigned effective = dnnl_get_effective_cpu_isa();
    if ((effective & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core) {
      return VectorIsa::kAvx512;
    }
    if ((effective & dnnl_cpu_isa_avx2) == dnnl_cpu_isa_avx2) return VectorIsa::kAvx2;
    return VectorIsa::kBaseline;
  }();
  return isa;
}

}  // namespace lockstep::cpu
