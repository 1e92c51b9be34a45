#include "graph/builder.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "graph/compile.h"
#include "graph/op_registry.h"

namespace lockstep {
namespace {

std::string Message(const absl::Status& status) { return std::string(status.message()); }

TEST(BuilderTest, UnknownOpListsKnownOnes) {
  Graph graph;
  Builder b(&graph);
  EXPECT_EQ(b.Op1("Convolution3D", {b.Input("x", {1})}), nullptr);
  EXPECT_EQ(b.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(Message(b.status()).find("unknown op 'Convolution3D'"), std::string::npos);
  EXPECT_NE(Message(b.status()).find("Relu"), std::string::npos) << b.status();
}

TEST(BuilderTest, ErrorsAreStickyAndKeepTheFirst) {
  Graph graph;
  Builder b(&graph);
  Value* x = b.Input("x", {2, 3});
  EXPECT_EQ(b.Op1("Add", {x, b.Input("y", {3})}), nullptr);
  EXPECT_EQ(b.Op1("Relu", {x}), nullptr);
  EXPECT_NE(Message(b.status()).find("Add (node 'Add_2') with inputs f32[2, 3], f32[3]"),
            std::string::npos)
      << b.status();
}

TEST(BuilderTest, AttributesAreCheckedAgainstTheDeclaration) {
  Graph graph;
  Builder b(&graph);
  Value* x = b.Input("x", {2});
  EXPECT_EQ(b.Op1("Scale", {x}, {{"factor", 2.0}}), nullptr);
  EXPECT_NE(Message(b.status()).find("has no attribute 'factor'"), std::string::npos);
  Builder b2(&graph);
  EXPECT_EQ(b2.Op1("Scale", {x}), nullptr);
  EXPECT_NE(Message(b2.status()).find("needs attribute 'scale'"), std::string::npos);
}

TEST(BuilderTest, NamePrefixAndDuplicateInputs) {
  Graph graph;
  Builder b(&graph);
  Value* x = b.Input("x", {2});
  b.SetNamePrefix("block1/");
  Value* y = b.Op1("Relu", {x});
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(y->producer->name.rfind("block1/Relu_", 0), 0u) << y->producer->name;
  EXPECT_EQ(b.Input("x", {3}), nullptr);
  EXPECT_NE(Message(b.status()).find("'x' defined twice"), std::string::npos);
}

TEST(BuilderTest, DumpsEveryPassWhenAsked) {
  auto dir = std::filesystem::temp_directory_path() / "lockstep_dump_test";
  std::filesystem::remove_all(dir);
  auto graph = std::make_unique<Graph>();
  Builder b(graph.get());
  graph->AddOutput("y", b.Op1("Relu", {b.Input("x", {4})}), OutputKind::kResult);
  CompileOptions options;
  options.dump_dir = dir.string();
  ASSERT_TRUE(Compile(std::move(graph), options).ok());
  EXPECT_TRUE(std::filesystem::exists(dir / "00_input.txt"));
  EXPECT_TRUE(std::filesystem::exists(dir / "05_LowerKernels.txt"));
  std::filesystem::remove_all(dir);
}

TEST(BuilderTest, MissingKernelNamesTheNode) {
  auto graph = std::make_unique<Graph>();
  Builder b(graph.get());
  Value* x = b.Input("x", {4}, DType::kU8);
  graph->AddOutput("y", b.Op1("Relu", {x}), OutputKind::kResult);
  auto executor = Compile(std::move(graph), {});
  ASSERT_FALSE(executor.ok());
  EXPECT_NE(Message(executor.status()).find("no CPU kernel for Relu node"), std::string::npos)
      << executor.status();
}

}  // namespace
}  // namespace lockstep
