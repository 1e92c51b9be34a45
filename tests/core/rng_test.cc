#include "core/rng.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <vector>

namespace lockstep {
namespace {

// Known-answer vectors of Philox4x32-10 from the Random123 distribution (kat_vectors).
TEST(PhiloxTest, MatchesRandom123KnownAnswers) {
  Philox zero(0, 0);
  std::array<uint32_t, 4> z = zero.Block(0);
  EXPECT_EQ(z[0], 0x6627e8d5u);
  EXPECT_EQ(z[1], 0xe169c58du);
  EXPECT_EQ(z[2], 0xbc57ac4cu);
  EXPECT_EQ(z[3], 0x9b00dbd8u);

  // ctr = ffffffff x4, key = ffffffff x2.
  Philox ones(~0ull, ~0ull);
  std::array<uint32_t, 4> o = ones.Block(~0ull);
  EXPECT_EQ(o[0], 0x408f276du);
  EXPECT_EQ(o[1], 0x41c83b0eu);
  EXPECT_EQ(o[2], 0xa20bc7c6u);
  EXPECT_EQ(o[3], 0x6d5451fdu);
}

TEST(PhiloxTest, SameNumbersForAnyThreadCount) {
  Philox rng(42, 7);
  std::vector<float> one(1001), four(1001), tail(501);
  omp_set_num_threads(1);
  rng.Normal(one.data(), one.size(), 0.0f, 1.0f);
  omp_set_num_threads(4);
  rng.Normal(four.data(), four.size(), 0.0f, 1.0f);
  rng.Normal(tail.data(), tail.size(), 0.0f, 1.0f, /*offset=*/500);
  omp_set_num_threads(1);
  EXPECT_EQ(one, four);
  for (size_t i = 0; i < tail.size(); ++i) EXPECT_EQ(tail[i], one[500 + i]);
}

TEST(PhiloxTest, UniformAndNormalMoments) {
  Philox rng(1, 2);
  std::vector<float> u(100000), n(100000);
  rng.Uniform(u.data(), u.size());
  rng.Normal(n.data(), n.size(), 2.0f, 3.0f);
  double su = 0, sn = 0, sn2 = 0;
  for (float x : u) {
    ASSERT_GE(x, 0.0f);
    ASSERT_LT(x, 1.0f);
    su += x;
  }
  for (float x : n) sn += x, sn2 += x * x;
  double mean = sn / n.size();
  EXPECT_NEAR(su / u.size(), 0.5, 0.01);
  EXPECT_NEAR(mean, 2.0, 0.05);
  EXPECT_NEAR(std::sqrt(sn2 / n.size() - mean * mean), 3.0, 0.05);
}

TEST(PhiloxTest, StreamsDiffer) {
  EXPECT_NE(Philox(5, 0).Block(0), Philox(5, 1).Block(0));
  EXPECT_NE(Philox(5, 0).Block(0), Philox(6, 0).Block(0));
}

}  // namespace
}  // namespace lockstep
