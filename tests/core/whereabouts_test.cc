#include "core/whereabouts.h"

#include <gtest/gtest.h>

namespace lockstep {
namespace {

TEST(WhereaboutsTest, NumbersCollectivesFromOneAndKeepsTheHighestCompleted) {
  Whereabouts where;
  EXPECT_EQ(where.Now().issued, 0);
  EXPECT_EQ(where.IssueCollective("AllReduce 'a'"), 1);
  EXPECT_EQ(where.IssueCollective("AllReduce 'b'"), 2);
  where.CompleteCollective(2);
  where.CompleteCollective(1);  // a queue that finishes late does not move the mark back
  const Whereabouts::Snapshot now = where.Now();
  EXPECT_EQ(now.issued, 2);
  EXPECT_EQ(now.issued_label, "AllReduce 'b'");
  EXPECT_EQ(now.completed, 2);
}

TEST(WhereaboutsTest, NodeIsClearedBetweenSteps) {
  Whereabouts where;
  where.EnterNode("Conv2D node 'conv1' (#3)");
  EXPECT_EQ(where.Now().node, "Conv2D node 'conv1' (#3)");
  where.LeaveStep();
  EXPECT_EQ(where.Now().node, "");
}

TEST(WhereaboutsTest, EachRecordNumbersItsOwnCollectives) {
  Whereabouts first, second;  // two contexts' records: nothing is shared between them
  first.IssueCollective("AllReduce 'a'");
  EXPECT_EQ(second.IssueCollective("AllReduce 'a'"), 1);
}

}  // namespace
}  // namespace lockstep
