// A log line never lands on a line a progress bar left open: it ends that line first.

#include "core/logging.h"

#include <gtest/gtest.h>

#include <sstream>

namespace lockstep {
namespace {

TEST(LoggingTest, ALogLineEndsTheLineLeftOpenFirst) {
  std::ostringstream bar;
  bar << "\repoch 1/6 [=====     ] step 5/10";
  SetOpenLine(&bar);
  LS_LOG(Warning) << "skipping bad image file x.jpg";
  EXPECT_EQ(bar.str(), "\repoch 1/6 [=====     ] step 5/10\n");
  LS_LOG(Warning) << "a second line";  // the bar's line is closed now: nothing more on it
  EXPECT_EQ(bar.str(), "\repoch 1/6 [=====     ] step 5/10\n");
  SetOpenLine(&bar);
  ForgetOpenLine(&bar);  // the bar goes
  LS_LOG(Warning) << "a third line";
  EXPECT_EQ(bar.str(), "\repoch 1/6 [=====     ] step 5/10\n");
}

}  // namespace
}  // namespace lockstep
