#include "ops/cpu/cpu_layouts.h"

#include <oneapi/dnnl/dnnl.h>

namespace lockstep {
namespace {

// Whether oneDNN runs its AVX-512 kernels. Bit test, not <=: the ISA values are feature masks
// (avx2_vnni is numerically above avx512_core).
bool OneDnnUsesAvx512() {
  static const bool avx512 =
      (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core;
  return avx512;
}

Layout IfEligible(Layout layout, const Value& value) {
  return LayoutEligible(layout, value.shape(), value.dtype()) ? layout : Layout::kPlain;
}

}  // namespace

Layout NativeBlockedLayout() { return OneDnnUsesAvx512() ? Layout::kNChw16c : Layout::kNChw8c; }

Layout NativeWeightLayout() { return OneDnnUsesAvx512() ? Layout::kOIhw16i16o : Layout::kOIhw8i8o; }

Layout BlockedIfEligible(const Value& value) { return IfEligible(NativeBlockedLayout(), value); }

Layout WeightLayoutIfEligible(const Value& value) {
  return IfEligible(NativeWeightLayout(), value);
}

LayoutChoice BlockedWhereEligible(const Node& node, const std::vector<Layout>&) {
  LayoutChoice choice;
  for (const Value* input : node.inputs) choice.inputs.push_back(BlockedIfEligible(*input));
  for (const auto& output : node.outputs) choice.outputs.push_back(BlockedIfEligible(*output));
  return choice;
}

}  // namespace lockstep
