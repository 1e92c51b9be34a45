#include "graph/serialize.h"

#include <gtest/gtest.h>

#include "graph/builder.h"
#include "graph/compile.h"

namespace lockstep {
namespace {

std::unique_ptr<Executor> CompileSmallGraph(double scale) {
  auto graph = std::make_unique<Graph>();
  Builder b(graph.get());
  Value* w = b.Parameter("w", {2, 3});
  Value* y = b.Op1("Scale", {b.Op1("Relu", {w})}, {{"scale", scale}});
  graph->AddOutput("y", y, OutputKind::kResult);
  auto executor = Compile(std::move(graph), {});
  EXPECT_TRUE(executor.ok()) << executor.status();
  return std::move(*executor);
}

TEST(SerializeTest, ProtoHoldsNodesParametersAndPlan) {
  proto::GraphDef def = ToProto(CompileSmallGraph(2.0)->graph());
  ASSERT_EQ(def.nodes_size(), 3);
  EXPECT_EQ(def.nodes(1).op(), "Relu");
  EXPECT_EQ(def.nodes(2).attrs().at("scale").f(), 2.0);
  ASSERT_EQ(def.parameters_size(), 1);
  EXPECT_EQ(def.parameters(0).name(), "w");
  EXPECT_EQ(def.parameters(0).dims_size(), 2);
  EXPECT_EQ(def.parameters(0).bytes(), 24u);
  EXPECT_EQ(def.outputs(0).kind(), "result");
  EXPECT_EQ(def.plan().parameters(), 64u);
  EXPECT_EQ(def.fingerprint().size(), 16u);
}

TEST(SerializeTest, FingerprintIsStableAndSensitive) {
  std::string a = Fingerprint(CompileSmallGraph(2.0)->graph());
  std::string b = Fingerprint(CompileSmallGraph(2.0)->graph());
  std::string c = Fingerprint(CompileSmallGraph(3.0)->graph());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

}  // namespace
}  // namespace lockstep
