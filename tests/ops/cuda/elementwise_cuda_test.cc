// The element-wise, shape and layout CUDA kernels against their CPU twins (skipped without a
// GPU).

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/compile.h"
#include "tests/testing/backend_compare.h"

namespace lockstep {
namespace {

using testing::ExpectCudaMatchesCpu;
using testing::ExpectCudaOpMatchesCpu;

const Shape kShape = {4, 8, 5, 3};

TEST(ElementwiseCudaTest, BinaryAndReluOps) {
  LS_SKIP_WITHOUT_GPU();
  // Packs of two float32s, and 315 elements, one past the last pack.
  for (const Shape& x : {kShape, Shape{3, 7, 5, 3}}) {
    SCOPED_TRACE(ShapeToString(x));
    ExpectCudaOpMatchesCpu("Add", {{"a", x}, {"b", x}});
    ExpectCudaOpMatchesCpu("AddRelu", {{"a", x}, {"b", x}});
    ExpectCudaOpMatchesCpu("Relu", {{"x", x}});
    ExpectCudaOpMatchesCpu("ReluGrad", {{"x", x}, {"dy", x}});
    ExpectCudaOpMatchesCpu("AddReluGrad", {{"x", x}, {"dy1", x}, {"dy2", x}});
  }
}

TEST(ElementwiseCudaTest, ScaleAndFill) {
  LS_SKIP_WITHOUT_GPU();
  ExpectCudaOpMatchesCpu("Scale", {{"x", kShape}}, {{"scale", -0.37}});
  ExpectCudaMatchesCpu({}, [](Builder& b, const std::vector<Value*>&) {
    return std::vector<Value*>{b.Op1(
        "Fill", {}, {{"shape", Shape{3, 1000}}, {"value", 2.5}, {"dtype", std::string("f32")}})};
  });
}

// x (f32) -> From -> To -> f32 for every registered pair; values large enough that the integer
// casts truncate something.
TEST(ElementwiseCudaTest, CastEveryPair) {
  LS_SKIP_WITHOUT_GPU();
  const std::vector<std::string> dtypes = {"f32", "f64", "i32", "i64"};
  for (const std::string& from : dtypes) {
    for (const std::string& to : dtypes) {
      SCOPED_TRACE(from + " -> " + to);
      ExpectCudaMatchesCpu(
          {{.name = "x", .shape = {257}, .stddev = 100.0f}},
          [&](Builder& b, const std::vector<Value*>& in) {
            Value* x = b.Op1("Cast", {in[0]}, {{"dtype", from}});
            Value* y = b.Op1("Cast", {x}, {{"dtype", to}});
            return std::vector<Value*>{b.Op1("Cast", {y}, {{"dtype", std::string("f32")}})};
          });
    }
  }
}

TEST(ElementwiseCudaTest, BiasAddAndItsGradient) {
  LS_SKIP_WITHOUT_GPU();
  ExpectCudaOpMatchesCpu("BiasAdd", {{"x", {8, 16, 7, 7}}, {"bias", {16}}});
  ExpectCudaOpMatchesCpu("BiasAdd", {{"x", {64, 1000}}, {"bias", {1000}}});
  // Sums of 32 * 196 and 256 elements: each a tree reduction of one block.
  ExpectCudaOpMatchesCpu("BiasAddGrad", {{"dy", {32, 64, 14, 14}}});
  ExpectCudaOpMatchesCpu("BiasAddGrad", {{"dy", {256, 1000}}});
}

TEST(ShapeCudaTest, IdentityReshapeFlattenAndPlainReorder) {
  LS_SKIP_WITHOUT_GPU();
  ExpectCudaOpMatchesCpu("Identity", {{"x", kShape}});
  ExpectCudaOpMatchesCpu("Reshape", {{"x", kShape}}, {{"shape", Shape{-1, 15}}});
  ExpectCudaOpMatchesCpu("Flatten", {{"x", kShape}});
  ExpectCudaOpMatchesCpu("Reorder", {{"x", kShape}}, {{"layout", std::string("plain")}});
}

TEST(ShapeCudaTest, BlockedReorderIsACompileErrorNamingTheLayouts) {
  LS_SKIP_WITHOUT_GPU();
  auto graph = std::make_unique<Graph>();
  Builder b(graph.get());
  Value* y = b.Op1("Reorder", {b.Input("x", {2, 16, 3, 3})}, {{"layout", std::string("nChw8c")}});
  ASSERT_TRUE(b.status().ok()) << b.status();
  graph->AddOutput("y", y, OutputKind::kResult);
  auto executor = Compile(std::move(graph), {.device = Device::CUDA(0)});
  ASSERT_FALSE(executor.ok());
  const std::string message(executor.status().message());
  for (const char* part : {"Reorder", "plain", "nChw8c"}) {
    EXPECT_NE(message.find(part), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace lockstep
