#include "parallel/shared_layouts.h"

#include <gtest/gtest.h>

namespace lockstep::parallel {
namespace {

using Offers = std::vector<std::vector<std::string>>;
using Names = std::vector<std::string>;

// An AVX-512 host offers both weight blocks, an AVX2 host the narrower one: they share it,
// whichever rank is rank 0. Alike hosts keep everything, in rank 0's order.
TEST(SharedLayoutsTest, RankZerosOfferLessWhatAnyRankLacks) {
  EXPECT_EQ(CommonLayouts(Offers{{"OIhw16i16o", "OIhw8i8o"}, {"OIhw8i8o"}}), Names{"OIhw8i8o"});
  EXPECT_EQ(CommonLayouts(Offers{{"OIhw8i8o"}, {"OIhw16i16o", "OIhw8i8o"}}), Names{"OIhw8i8o"});
  EXPECT_EQ(CommonLayouts(Offers{{"OIhw16i16o", "OIhw8i8o"}, {"OIhw16i16o", "OIhw8i8o"}}),
            (Names{"OIhw16i16o", "OIhw8i8o"}));
  EXPECT_EQ(CommonLayouts(Offers{{"OIhw16i16o"}, {"OIhw8i8o"}}), Names{});
  EXPECT_EQ(CommonLayouts(Offers{{"a", "b"}}), (Names{"a", "b"}));
}

}  // namespace
}  // namespace lockstep::parallel
