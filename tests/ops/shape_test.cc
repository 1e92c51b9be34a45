#include <gtest/gtest.h>

#include "tests/testing/grad_check.h"

namespace lockstep {
namespace {

using testing::ExpectOpGradientsMatch;

TEST(ShapeTest, ReshapeInfersMinusOneAndDifferentiates) {
  ExpectOpGradientsMatch("Reshape", {{"x", {2, 3, 4}}}, {{"shape", Shape{4, -1}}});
}

TEST(ShapeTest, FlattenKeepsTheBatchAxis) {
  Graph graph;
  Builder b(&graph);
  Value* y = b.Op1("Flatten", {b.Input("x", {2, 3, 4, 5})});
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(y->shape(), (Shape{2, 60}));
  ExpectOpGradientsMatch("Flatten", {{"x", {2, 3, 2, 2}}}, {});
  ExpectOpGradientsMatch("Identity", {{"x", {3}}}, {});
}

TEST(ShapeTest, BadReshapeIsAnError) {
  Graph graph;
  Builder b(&graph);
  EXPECT_EQ(b.Op1("Reshape", {b.Input("x", {2, 3})}, {{"shape", Shape{4, 2}}}), nullptr);
  EXPECT_NE(std::string(b.status().message()).find("cannot reshape 6 elements into [4, 2]"),
            std::string::npos)
      << b.status();
}

}  // namespace
}  // namespace lockstep
