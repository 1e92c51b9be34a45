#include <gtest/gtest.h>

#include "tests/testing/grad_check.h"

namespace lockstep {
namespace {

using testing::ExpectOpGradientsMatch;
using testing::GradCheckInput;

TEST(ElementwiseTest, AddGradient) {
  ExpectOpGradientsMatch("Add", {{"a", {2, 3, 4}}, {"b", {2, 3, 4}}}, {});
}

TEST(ElementwiseTest, ReluGradientAwayFromTheKink) {
  ExpectOpGradientsMatch("Relu", {{"x", {3, 17}}}, {}, {.kink = 0.05});
}

TEST(ElementwiseTest, ScaleGradient) {
  ExpectOpGradientsMatch("Scale", {{"x", {5, 2}}}, {{"scale", -0.75}});
}

TEST(ElementwiseTest, BiasAddGradient) {
  ExpectOpGradientsMatch("BiasAdd", {{"x", {2, 3, 2, 2}}, {"bias", {3}}}, {});
  ExpectOpGradientsMatch("BiasAdd", {{"x", {4, 5}}, {"bias", {5}}}, {});
}

TEST(ElementwiseTest, CastRoundTripGradient) {
  testing::ExpectGradientsMatch({{"x", {6}}}, [](Builder& b, const std::vector<Value*>& in) {
    Value* wide = b.Op1("Cast", {in[0]}, {{"dtype", std::string("f64")}});
    return std::vector<Value*>{b.Op1("Cast", {wide}, {{"dtype", std::string("f32")}})};
  });
}

TEST(ElementwiseTest, ForwardValues) {
  std::vector<GradCheckInput> inputs = {{.name = "x", .shape = {4}, .values = {-2, -0.5, 0.5, 3}},
                                        {.name = "b", .shape = {4}, .values = {1, 1, 1, 1}}};
  auto outputs = testing::RunForward(inputs, [](Builder& b, const std::vector<Value*>& in) {
    return std::vector<Value*>{b.Op1("Relu", {in[0]}), b.Op1("Add", {in[0], in[1]}),
                               b.Op1("Scale", {in[0]}, {{"scale", 2.0}}),
                               b.Op1("Fill", {}, {{"shape", Shape{2}}, {"value", 1.5}})};
  });
  ASSERT_EQ(outputs.size(), 4u);
  EXPECT_EQ(outputs[0], (std::vector<float>{0, 0, 0.5, 3}));
  EXPECT_EQ(outputs[1], (std::vector<float>{-1, 0.5, 1.5, 4}));
  EXPECT_EQ(outputs[2], (std::vector<float>{-4, -1, 1, 6}));
  EXPECT_EQ(outputs[3], (std::vector<float>{1.5, 1.5}));
}

TEST(ElementwiseTest, ShapeErrorsNameTheOpAndShapes) {
  Graph graph;
  Builder b(&graph);
  Value* x = b.Input("x", {2, 3});
  Value* y = b.Input("y", {3, 2});
  EXPECT_EQ(b.Op1("Add", {x, y}), nullptr);
  std::string message(b.status().message());
  EXPECT_NE(message.find("Add"), std::string::npos) << message;
  EXPECT_NE(message.find("f32[2, 3]"), std::string::npos) << message;
  EXPECT_NE(message.find("f32[3, 2]"), std::string::npos) << message;
}

}  // namespace
}  // namespace lockstep
