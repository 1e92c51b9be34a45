#include "ops/cpu/cpu_layouts.h"

#include <oneapi/dnnl/dnnl.h>

namespace lockstep {
namespace cpu {
namespace {

// Whether oneDNN runs its AVX-512 kernels. Bit test, not <=: the ISA values are feature masks
// (avx2_vnni is numerically above avx512_core).
bool OneDnnUsesAvx512() {
  static const bool avx512 =
      (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core;
  return avx512;
}

// Float32, bf16 or f16 (a value's bytes follow its dtype), 4-D, and the blocked dimensions whole
// multiples of `block`.
LayoutInfo Blocked(std::string name, int block, bool weights) {
  return {std::move(name), [block, weights](const Shape& shape, DType dtype) {
            return IsFloat(dtype) && shape.size() == 4 && shape[1] % block == 0 &&
                   (!weights || shape[0] % block == 0);
          }};
}

struct Registered {
  Layout activations8 = RegisterLayout(Blocked("nChw8c", 8, false));
  Layout activations16 = RegisterLayout(Blocked("nChw16c", 16, false));
  Layout weights8 = RegisterLayout(Blocked("OIhw8i8o", 8, true));
  Layout weights16 = RegisterLayout(Blocked("OIhw16i16o", 16, true));
};

const Registered& Layouts() {
  static const auto* layouts = new Registered();
  return *layouts;
}

// Registered when the program loads, so that their names parse (graph dumps, .meta files)
// before any kernel asked for one.
[[maybe_unused]] const Registered& kLoaded = Layouts();

}  // namespace

Layout BlockedActivations(int block) {
  return block == 16 ? Layouts().activations16 : Layouts().activations8;
}

Layout BlockedWeights(int block) { return block == 16 ? Layouts().weights16 : Layouts().weights8; }

int ChannelBlock(Layout layout) {
  return layout == Layouts().activations16 ? 16 : layout == Layouts().activations8 ? 8 : 1;
}

std::vector<Layout> WeightLayoutOffer() {
  if (OneDnnUsesAvx512()) return {BlockedWeights(16), BlockedWeights(8)};
  return {BlockedWeights(8)};
}

}  // namespace cpu

namespace {

Layout IfEligible(Layout layout, const Value& value) {
  return LayoutEligible(layout, value.shape(), value.dtype()) ? layout : Layout::kPlain;
}

}  // namespace

Layout NativeBlockedLayout() { return cpu::BlockedActivations(cpu::OneDnnUsesAvx512() ? 16 : 8); }

Layout NativeWeightLayout() { return cpu::WeightLayoutOffer().front(); }

Layout BlockedIfEligible(const Value& value) { return IfEligible(NativeBlockedLayout(), value); }

Layout WeightLayoutIfEligible(const Value& value, const SharedLayouts& shared) {
  std::vector<Layout> eligible;
  for (Layout layout : cpu::WeightLayoutOffer()) {
    if (LayoutEligible(layout, value.shape(), value.dtype())) eligible.push_back(layout);
  }
  return shared.Pick(eligible);
}

LayoutChoice BlockedWhereEligible(const Node& node, const std::vector<Layout>&,
                                  const SharedLayouts&) {
  LayoutChoice choice;
  for (const Value* input : node.inputs) choice.inputs.push_back(BlockedIfEligible(*input));
  for (const auto& output : node.outputs) choice.outputs.push_back(BlockedIfEligible(*output));
  return choice;
}

}  // namespace lockstep
