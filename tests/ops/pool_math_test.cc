// The window arithmetic of ops/pool_math.h, which the CUDA pooling kernels share, against brute
// force.

#include "ops/pool_math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace lockstep {
namespace {

// The outputs whose windows cover each input index, and AvgPool's divisors, by brute force.
TEST(PoolWindowMathTest, CoveringOutputsAndDivisors) {
  for (int kernel : {1, 2, 3}) {
    for (int stride : {1, 2, 3}) {
      for (int pad = 0; 2 * pad <= kernel; ++pad) {
        const int32_t size = 9, outputs = (size + 2 * pad - kernel) / stride + 1;
        for (int32_t i = 0; i < size; ++i) {
          int32_t first = 0, last = 0;  // as the GPU kernels compute it where indices fit
          math::CoveringOutputs(i, kernel, stride, pad, outputs, &first, &last);
          for (int32_t o = 0; o < outputs; ++o) {
            const bool covers = o * stride - pad <= i && i < o * stride - pad + kernel;
            EXPECT_EQ(covers, o >= first && o <= last)
                << "k" << kernel << " s" << stride << " p" << pad << " i" << i << " o" << o;
          }
        }
      }
    }
  }
  math::PoolGeometry g{.h = 5,
                       .w = 5,
                       .oh = 3,
                       .ow = 3,
                       .kh = 3,
                       .kw = 3,
                       .sh = 2,
                       .sw = 2,
                       .ph = 1,
                       .pw = 1,
                       .count_include_pad = false};
  EXPECT_EQ(math::AvgDivisor(g, 0, 0), 4);  // a corner: 2 x 2 inside
  EXPECT_EQ(math::AvgDivisor(g, 1, 1), 9);
  EXPECT_EQ(math::AvgDivisor(g, 2, 1), 6);  // bottom edge: 2 x 3 inside
  g.count_include_pad = true;
  EXPECT_EQ(math::AvgDivisor(g, 0, 0), 9);
}

// Storage offsets of (n, c, h, w), plain and channels-last, and back, in either index type.
template <typename I>
void ExpectOffsetsAndTheirInverse() {
  const I kN = 2, kC = 3, kH = 4, kW = 5;
  for (bool channels_last : {false, true}) {
    std::vector<bool> seen(kN * kC * kH * kW, false);
    for (I n = 0; n < kN; ++n) {
      for (I c = 0; c < kC; ++c) {
        for (I h = 0; h < kH; ++h) {
          for (I w = 0; w < kW; ++w) {
            const I offset = math::ElementOffset(n, c, h, w, kC, kH, kW, channels_last);
            const I expected =
                channels_last ? ((n * kH + h) * kW + w) * kC + c : ((n * kC + c) * kH + h) * kW + w;
            ASSERT_EQ(offset, expected);
            seen[offset] = true;
            const math::Element4Of<I> at = math::ElementAt(offset, kC, kH, kW, channels_last);
            EXPECT_EQ(at.n, n);
            EXPECT_EQ(at.c, c);
            EXPECT_EQ(at.h, h);
            EXPECT_EQ(at.w, w);
          }
        }
      }
    }
    EXPECT_EQ(std::count(seen.begin(), seen.end(), true), kN * kC * kH * kW);
  }
}

TEST(PoolWindowMathTest, ElementOffsetsAndTheirInverse) {
  ExpectOffsetsAndTheirInverse<int64_t>();
  ExpectOffsetsAndTheirInverse<int32_t>();
}

}  // namespace
}  // namespace lockstep
