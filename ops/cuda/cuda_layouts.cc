#include "ops/cuda/cuda_layouts.h"

#include <cstring>

namespace lockstep::cuda {
namespace {

const Layout& Registered() {
  static const Layout nhwc = RegisterLayout({"nhwc", NhwcEligible});
  return nhwc;
}

// Registered when the program loads, so that the name parses (graph dumps, .meta files) before
// any kernel asked for it.
[[maybe_unused]] const Layout& kLoaded = Registered();

// Element (i0, i1, i2, i3) of the plain value is element (i0, i2, i3, i1) of the NHWC one.
template <bool kToNhwc>
void Permute(const char* from, char* to, const Shape& shape, size_t bytes) {
  const int64_t d1 = shape[1], d2 = shape[2], d3 = shape[3];
  for (int64_t i0 = 0; i0 < shape[0]; ++i0) {
    for (int64_t i1 = 0; i1 < d1; ++i1) {
      for (int64_t i2 = 0; i2 < d2; ++i2) {
        for (int64_t i3 = 0; i3 < d3; ++i3) {
          const int64_t plain = ((i0 * d1 + i1) * d2 + i2) * d3 + i3;
          const int64_t nhwc = ((i0 * d2 + i2) * d3 + i3) * d1 + i1;
          if (kToNhwc) {
            memcpy(to + nhwc * bytes, from + plain * bytes, bytes);
          } else {
            memcpy(to + plain * bytes, from + nhwc * bytes, bytes);
          }
        }
      }
    }
  }
}

}  // namespace

Layout NhwcLayout() { return Registered(); }

bool NhwcEligible(const Shape& shape, DType dtype) {
  return shape.size() == 4 && IsLowPrecision(dtype);
}

Layout NhwcIfEligible(const Value& value) {
  return NhwcEligible(value.shape(), value.dtype()) ? NhwcLayout() : Layout::kPlain;
}

LayoutChoice NhwcWhereEligible(const Node& node, const std::vector<Layout>&, const SharedLayouts&) {
  LayoutChoice choice;
  for (const Value* input : node.inputs) choice.inputs.push_back(NhwcIfEligible(*input));
  for (const auto& output : node.outputs) choice.outputs.push_back(NhwcIfEligible(*output));
  return choice;
}

void PermuteToNhwc(const void* plain, void* nhwc, const Shape& shape, size_t element_bytes) {
  Permute<true>(static_cast<const char*>(plain), static_cast<char*>(nhwc), shape, element_bytes);
}

void PermuteFromNhwc(const void* nhwc, void* plain, const Shape& shape, size_t element_bytes) {
  Permute<false>(static_cast<const char*>(nhwc), static_cast<char*>(plain), shape, element_bytes);
}

}  // namespace lockstep::cuda
