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

// oneDNN's scratchpads, and with them the workspace, grow with the threads, which may differ
// between ranks and between runs.
TEST(SerializeTest, FingerprintLeavesOutTheWorkspace) {
  proto::GraphDef def = ToProto(CompileSmallGraph(2.0)->graph());
  def.mutable_plan()->set_workspace(def.plan().workspace() + 4096);
  EXPECT_EQ(Fingerprint(def), def.fingerprint());
  EXPECT_TRUE(IsOwnFingerprint(def));
}

// A .meta saved by builds that hashed the workspace still carries its own fingerprint.
TEST(SerializeTest, FingerprintsThatHashedTheWorkspaceStillMatch) {
  proto::GraphDef def;
  def.add_nodes()->set_op("Relu");
  def.mutable_plan()->set_workspace(4096);
  def.set_fingerprint("7be6f47cc0cebca2");  // FNV-1a 64 of its bytes, workspace included
  EXPECT_NE(Fingerprint(def), def.fingerprint());
  EXPECT_TRUE(IsOwnFingerprint(def));
  def.mutable_plan()->set_workspace(8192);
  EXPECT_FALSE(IsOwnFingerprint(def));
}

TEST(SerializeTest, GradientOutputsNameTheirParameterValue) {
  auto graph = std::make_unique<Graph>();
  Builder b(graph.get());
  Value* logits = b.Op1("MatMul", {b.Input("x", {2, 4}), b.Parameter("w", {4, 3})});
  graph->AddOutput("loss", b.Op("SoftmaxCrossEntropy", {logits, b.Input("l", {2}, DType::kI32)})[0],
                   OutputKind::kResult);
  auto executor = Compile(std::move(graph), {.autodiff = AutodiffOptions{}});
  ASSERT_TRUE(executor.ok()) << executor.status();
  const Graph& compiled = (*executor)->graph();
  proto::GraphDef def = ToProto(compiled);
  ASSERT_EQ(def.outputs_size(), 2);
  EXPECT_FALSE(def.outputs(0).has_parameter());
  EXPECT_EQ(def.outputs(1).name(), "grad/w");
  EXPECT_EQ(def.outputs(1).kind(), "gradient");
  ASSERT_TRUE(def.outputs(1).has_parameter());
  EXPECT_EQ(def.outputs(1).parameter(), compiled.FindInput("w")->output()->id);
}

// What each host's backend decides for itself stays out of the fingerprint: a rank whose CPU
// blocks activations by 8 channels and one that blocks them by 16 (or not at all) insert other
// layout conversions and place activations elsewhere, but run the same job.
TEST(SerializeTest, FingerprintLeavesOutLayoutConversionsAndActivationPlaces) {
  auto value = [](proto::NodeDef* node, int id, const char* region, const char* layout,
                  uint64_t offset) {
    proto::ValueInfo* v = node->add_outputs();
    v->set_id(id);
    v->set_region(region);
    v->set_layout(layout);
    v->set_offset(offset);
  };
  // x (input) -> Relu -> y; the other host converts x before the Relu and places y elsewhere.
  proto::GraphDef plain;
  proto::NodeDef* x = plain.add_nodes();
  x->set_op("Input");
  value(x, 1, "inputs", "plain", 0);
  proto::NodeDef* relu = plain.add_nodes();
  relu->set_op("Relu");
  relu->add_inputs(1);
  value(relu, 2, "arena", "plain", 0);
  plain.add_outputs()->set_value(2);
  plain.mutable_plan()->set_arena(64);

  proto::GraphDef blocked = plain;
  proto::NodeDef* conversion = blocked.mutable_nodes()->Add();
  conversion->set_op("Reorder");
  conversion->set_converts_layout(true);
  conversion->add_inputs(1);
  value(conversion, 3, "arena", "nChw16c", 0);
  blocked.mutable_nodes()->SwapElements(1, 2);  // the conversion before the Relu
  blocked.mutable_nodes(2)->set_inputs(0, 3);
  blocked.mutable_nodes(2)->mutable_outputs(0)->set_layout("nChw16c");
  blocked.mutable_nodes(2)->mutable_outputs(0)->set_offset(128);
  blocked.mutable_plan()->set_arena(192);
  EXPECT_EQ(Fingerprint(blocked), Fingerprint(plain));

  // A parameter's layout is the job's: it counts.
  proto::GraphDef other_input = plain;
  other_input.mutable_nodes(0)->mutable_outputs(0)->set_layout("nChw16c");
  EXPECT_NE(Fingerprint(other_input), Fingerprint(plain));
  // So does what the nodes compute.
  proto::GraphDef other_op = plain;
  other_op.mutable_nodes(1)->set_op("Sigmoid");
  EXPECT_NE(Fingerprint(other_op), Fingerprint(plain));
}

// A .meta saved before the fingerprint left out host details still carries its own fingerprint.
TEST(SerializeTest, WholeGraphFingerprintsStillMatch) {
  proto::GraphDef def;
  def.add_nodes()->set_op("Relu");
  def.mutable_plan()->set_arena(4096);
  def.set_fingerprint("60f9dc7dd38e720a");  // FNV-1a 64 of its bytes, arena size included
  EXPECT_NE(Fingerprint(def), def.fingerprint());
  EXPECT_TRUE(IsOwnFingerprint(def));
}

}  // namespace
}  // namespace lockstep
