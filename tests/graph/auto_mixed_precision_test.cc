// The AutoMixedPrecision pass on LeNet and ResNet blocks, checked on the graph it writes (and
// after Autodiff): no low-precision kernel runs here.

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graph/amp.h"
#include "graph/builder.h"
#include "graph/compile.h"
#include "graph/passes/passes.h"
#include "train/model.h"
#include "train/models.h"

namespace lockstep {
namespace {

using train::Mode;

constexpr DType kF32 = DType::kF32;
constexpr DType kBF16 = DType::kBF16;

// The net's graph (softmax cross-entropy loss, batch 2) after AutoMixedPrecision at `level` (as
// Compile runs it: not at all at O0) and, for training graphs, Autodiff. The PassManager
// verifies the graph after each pass.
std::unique_ptr<Graph> Rewrite(const train::LayerPtr& net, AmpLevel level, Mode mode,
                               const Shape& image_shape, bool sync_batch_norm = false) {
  absl::StatusOr<train::NetGraph> built = train::BuildNetGraph(
      *net, train::SoftmaxCrossEntropy(), mode, 2, image_shape, sync_batch_norm);
  EXPECT_TRUE(built.ok()) << built.status();
  if (!built.ok()) return nullptr;
  PassContext ctx;
  ctx.config.Set(AmpOptions{.level = level, .dtype = kBF16});
  PassManager passes;
  if (level != AmpLevel::kO0) passes.Add(CreateAutoMixedPrecisionPass());
  if (mode == Mode::kTrain) passes.Add(CreateAutodiffPass());
  const absl::Status status = passes.Run(*built->graph, ctx);
  EXPECT_TRUE(status.ok()) << AmpLevelName(level) << ": " << status;
  return status.ok() ? std::move(built->graph) : nullptr;
}

bool IsGradientNode(const Node& node) { return node.name.rfind("grad/", 0) == 0; }

// The dtypes each op of the forward reads its data (input 0) in.
std::map<std::string, std::set<DType>> DataDTypes(const Graph& graph) {
  std::map<std::string, std::set<DType>> dtypes;
  for (const auto& node : graph.nodes()) {
    if (node->IsInput() || IsGradientNode(*node) || node->op->name() == "Cast") continue;
    dtypes[node->op->name()].insert(node->inputs[0]->dtype());
  }
  return dtypes;
}

// Checks the dtype every op of `low` and `float32` reads its data in, and the casts.
void ExpectDTypes(const Graph& graph, const std::set<std::string>& low,
                  const std::set<std::string>& float32, const std::string& where) {
  const std::map<std::string, std::set<DType>> dtypes = DataDTypes(graph);
  for (const auto& [ops, dtype] : {std::pair(low, kBF16), std::pair(float32, kF32)}) {
    for (const std::string& op : ops) {
      ASSERT_EQ(dtypes.count(op), 1u) << where << ": no " << op;
      EXPECT_EQ(dtypes.at(op), std::set<DType>{dtype}) << where << ": " << op;
    }
  }
}

// No Cast reads a Cast, no two Casts make one value in one dtype, nothing casts integers, and
// every Cast changes the dtype.
void ExpectCastsMinimal(const Graph& graph, const std::string& where) {
  std::set<std::pair<const Value*, std::string>> made;
  for (const auto& node : graph.nodes()) {
    if (node->op->name() != "Cast" || IsGradientNode(*node)) continue;
    const Value* source = node->inputs[0];
    EXPECT_NE(source->producer->op->name(), "Cast") << where << ": " << node->Describe();
    EXPECT_NE(source->dtype(), node->output()->dtype()) << where << ": " << node->Describe();
    EXPECT_NE(source->dtype(), DType::kI32) << where << ": " << node->Describe();
    EXPECT_TRUE(made.insert({source, node->attrs.GetString("dtype")}).second)
        << where << ": a second " << node->Describe();
  }
}

// Every parameter gradient is float32 like its parameter, and a parameter that reaches the net
// through a Cast gets its gradient from a Cast back.
void ExpectFloat32Gradients(const Graph& graph, const std::string& where) {
  const auto consumers = graph.Consumers();
  int cast_back = 0;
  for (const Node* parameter : graph.InputNodes(InputRole::kParameter)) {
    const GraphOutput* grad = graph.FindGradientOutput(parameter);
    ASSERT_NE(grad, nullptr) << where << ": " << parameter->name;
    EXPECT_EQ(grad->value->dtype(), kF32) << where << ": " << grad->name;
    bool cast = false;
    for (const Node* reader : consumers[parameter->output()->id]) {
      cast = cast || (reader->op->name() == "Cast" && !IsGradientNode(*reader));
    }
    if (!cast) continue;
    const Node& producer = *grad->value->producer;
    EXPECT_EQ(producer.op->name(), "Cast") << where << ": " << grad->name;
    EXPECT_EQ(producer.inputs[0]->dtype(), kBF16) << where << ": " << grad->name;
    ++cast_back;
  }
  EXPECT_GT(cast_back, 0) << where;
}

const Shape kLeNetImage = {1, 32, 32};

TEST(AutoMixedPrecisionTest, LeNetOpsRunInTheDTypeOfEachLevel) {
  const train::LayerPtr net = train::models::LeNet5(10);
  const std::set<std::string> all = {"Conv2D", "Relu", "MaxPool", "Flatten", "MatMul", "BiasAdd"};
  const std::set<std::string> compute = {"Conv2D", "MatMul"};
  const std::set<std::string> rest = {"Relu", "MaxPool", "Flatten", "BiasAdd"};
  const std::set<std::string> loss = {"SoftmaxCrossEntropy"};
  struct Case {
    AmpLevel level;
    std::set<std::string> low, float32;
  };
  std::set<std::string> float32_all = all;
  float32_all.insert("SoftmaxCrossEntropy");
  std::set<std::string> o1_float32 = rest;
  o1_float32.insert("SoftmaxCrossEntropy");
  for (const Case& c :
       {Case{AmpLevel::kO0, {}, float32_all}, Case{AmpLevel::kO1, compute, o1_float32},
        Case{AmpLevel::kO2, all, loss}, Case{AmpLevel::kO3, all, loss}}) {
    const std::string where = AmpLevelName(c.level);
    std::unique_ptr<Graph> graph = Rewrite(net, c.level, Mode::kTrain, kLeNetImage);
    ASSERT_NE(graph, nullptr);
    ExpectDTypes(*graph, c.low, c.float32, where);
    ExpectCastsMinimal(*graph, where);
    EXPECT_EQ(graph->FindOutput("loss")->value->dtype(), kF32) << where;
    if (c.level != AmpLevel::kO0) ExpectFloat32Gradients(*graph, where);
  }
}

TEST(AutoMixedPrecisionTest, ParametersAreCastOnceAndLabelsNever) {
  std::unique_ptr<Graph> graph =
      Rewrite(train::models::LeNet5(10), AmpLevel::kO2, Mode::kTrain, kLeNetImage);
  ASSERT_NE(graph, nullptr);
  const auto consumers = graph->Consumers();
  for (const Node* parameter : graph->InputNodes(InputRole::kParameter)) {
    std::vector<const Node*> forward;
    for (const Node* reader : consumers[parameter->output()->id]) {
      if (!IsGradientNode(*reader)) forward.push_back(reader);
    }
    // Its one forward reader is its Cast to bf16 (the optimizer is not added here).
    ASSERT_EQ(forward.size(), 1u) << parameter->name;
    EXPECT_EQ(forward[0]->op->name(), "Cast") << parameter->name;
    EXPECT_EQ(forward[0]->output()->dtype(), kBF16) << parameter->name;
  }
  for (const Node* reader : consumers[graph->FindInput("labels")->output()->id]) {
    EXPECT_NE(reader->op->name(), "Cast") << reader->Describe();
  }
  // The images are cast once, for the first convolution.
  const std::vector<Node*>& image_readers = consumers[graph->FindInput("images")->output()->id];
  ASSERT_EQ(image_readers.size(), 1u);
  EXPECT_EQ(image_readers[0]->op->name(), "Cast");
}

// The ResNet blocks with a classifier: block, global average pool, flatten, dense.
train::LayerPtr BlockNet(train::LayerPtr block, int64_t channels) {
  auto net = std::make_shared<train::Sequential>();
  net->Add(std::move(block))
      .Add(std::make_shared<train::GlobalAvgPool>())
      .Add(std::make_shared<train::Flatten>())
      .Add(std::make_shared<train::Dense>(channels, 3));
  return net;
}

struct BlockCase {
  const char* name;
  train::LayerPtr net;
  Shape image;
};

std::vector<BlockCase> Blocks() {
  return {{"basic", BlockNet(train::BasicBlock(8, 8, 1, false), 8), {8, 6, 6}},
          // Stride 2 and a downsample shortcut (conv and batch norm).
          {"bottleneck", BlockNet(train::Bottleneck(8, 4, 2, false), 16), {8, 6, 6}}};
}

TEST(AutoMixedPrecisionTest, ResNetBlocksRunInTheDTypeOfEachLevel) {
  const std::set<std::string> network = {"Conv2D",        "BatchNorm", "Relu",   "Add",
                                         "GlobalAvgPool", "Flatten",   "MatMul", "BiasAdd"};
  const std::set<std::string> rest = {"BatchNorm",     "Relu",    "Add",
                                      "GlobalAvgPool", "Flatten", "BiasAdd"};
  for (const BlockCase& block : Blocks()) {
    for (AmpLevel level : {AmpLevel::kO0, AmpLevel::kO1, AmpLevel::kO2, AmpLevel::kO3}) {
      const std::string where = absl::StrCat(block.name, " at ", AmpLevelName(level));
      std::unique_ptr<Graph> graph = Rewrite(block.net, level, Mode::kTrain, block.image);
      ASSERT_NE(graph, nullptr) << where;
      std::set<std::string> low, float32 = {"SoftmaxCrossEntropy"};
      if (level == AmpLevel::kO0) float32.insert(network.begin(), network.end());
      if (level == AmpLevel::kO1) {
        low = {"Conv2D", "MatMul"};
        float32.insert(rest.begin(), rest.end());
      }
      if (level >= AmpLevel::kO2) low = network;
      ExpectDTypes(*graph, low, float32, where);
      ExpectCastsMinimal(*graph, where);
      if (level != AmpLevel::kO0) ExpectFloat32Gradients(*graph, where);
    }
  }
}

// (x, gamma, beta, running mean, running var) of every BatchNorm, and its statistics outputs.
void ExpectBatchNorm(const Graph& graph, const char* op, DType x, DType scale_bias,
                     const std::string& where) {
  int seen = 0;
  for (const auto& node : graph.nodes()) {
    if (node->op->name() != op) continue;
    ++seen;
    EXPECT_EQ(node->inputs[0]->dtype(), x) << where;
    EXPECT_EQ(node->output(0)->dtype(), x) << where;
    for (int i : {1, 2}) EXPECT_EQ(node->inputs[i]->dtype(), scale_bias) << where << " input " << i;
    for (int i : {3, 4}) {
      EXPECT_EQ(node->inputs[i]->dtype(), kF32) << where << " input " << i;
      // The running statistics are read from the state itself: updates are in place.
      EXPECT_TRUE(node->inputs[i]->producer->IsInput()) << where << " input " << i;
    }
    for (size_t i = 1; i < node->outputs.size(); ++i) {
      EXPECT_EQ(node->output(i)->dtype(), kF32) << where << " output " << i;
    }
  }
  EXPECT_GT(seen, 0) << where << ": no " << op;
}

TEST(AutoMixedPrecisionTest, BatchNormKeepsStatisticsFloat32AndItsParametersBelowO3) {
  const BlockCase block = Blocks()[1];
  for (auto [level, x, scale_bias] :
       {std::tuple(AmpLevel::kO1, kF32, kF32), std::tuple(AmpLevel::kO2, kBF16, kF32),
        std::tuple(AmpLevel::kO3, kBF16, kBF16)}) {
    const std::string where = AmpLevelName(level);
    std::unique_ptr<Graph> train = Rewrite(block.net, level, Mode::kTrain, block.image);
    ASSERT_NE(train, nullptr);
    ExpectBatchNorm(*train, "BatchNorm", x, scale_bias, where);
    std::unique_ptr<Graph> eval = Rewrite(block.net, level, Mode::kEval, block.image);
    ASSERT_NE(eval, nullptr);
    ExpectBatchNorm(*eval, "BatchNormInference", x, scale_bias, where + " eval");
  }
}

TEST(AutoMixedPrecisionTest, SyncBatchNormStaysFloat32) {
  std::unique_ptr<Graph> graph = Rewrite(Blocks()[0].net, AmpLevel::kO3, Mode::kTrain,
                                         Blocks()[0].image, /*sync_batch_norm=*/true);
  ASSERT_NE(graph, nullptr);
  ExpectDTypes(*graph, {"Conv2D", "Relu", "Add"}, {"SyncBatchNorm", "SoftmaxCrossEntropy"}, "O3");
  ExpectCastsMinimal(*graph, "O3");
}

TEST(AutoMixedPrecisionTest, EvalResultsKeepTheirDTypes) {
  for (AmpLevel level : {AmpLevel::kO1, AmpLevel::kO2, AmpLevel::kO3}) {
    const std::string where = AmpLevelName(level);
    std::unique_ptr<Graph> graph =
        Rewrite(train::models::LeNet5(10), level, Mode::kEval, kLeNetImage);
    ASSERT_NE(graph, nullptr);
    EXPECT_EQ(graph->FindOutput("loss")->value->dtype(), kF32) << where;
    EXPECT_EQ(graph->FindOutput("logits")->value->dtype(), kF32) << where;
    EXPECT_EQ(graph->FindOutput("correct")->value->dtype(), DType::kI32) << where;
    ExpectDTypes(*graph, {"Conv2D", "MatMul"}, {"SoftmaxCrossEntropy", "AccuracyCount"}, where);
    ExpectCastsMinimal(*graph, where);
  }
}

// A graph that casts by itself: the pass uses a source of a Cast that is in the dtype it needs,
// or casts the first source, never a Cast's output.
TEST(AutoMixedPrecisionTest, LooksThroughCastsInsteadOfCastingThem) {
  Graph graph;
  Builder b(&graph);
  Value* x = b.Input("x", {2, 4});
  Value* w = b.Parameter("w", {3, 4});
  auto cast = [&](Value* value, const char* dtype) {
    return b.Op1("Cast", {value}, {{"dtype", std::string(dtype)}});
  };
  Value* low = cast(x, "bf16");
  Value* half = cast(low, "f16");
  Value* w16 = cast(w, "f16");
  const Attrs transpose_b = {{"transpose_b", true}};
  graph.AddOutput("same", b.Op1("MatMul", {half, w16}, transpose_b), OutputKind::kResult);
  Value* relu = b.Op1("Relu", {half});
  graph.AddOutput("relu", relu, OutputKind::kResult);
  // bf16 (2, 4) times f16 (4, 3): not a valid graph for the builder, so made valid by hand.
  Node* mixed = b.Op1("MatMul", {half, w16}, transpose_b)->producer;
  mixed->inputs[0] = low;
  graph.AddOutput("mixed", mixed->output(), OutputKind::kResult);
  ASSERT_TRUE(b.status().ok()) << b.status();
  PassContext ctx;
  ctx.config.Set(AmpOptions{.level = AmpLevel::kO1, .dtype = DType::kF16});
  PassManager passes;
  passes.Add(CreateAutoMixedPrecisionPass());
  ASSERT_TRUE(passes.Run(graph, ctx).ok());

  const Node& same = *graph.FindOutput("same")->value->producer;
  EXPECT_EQ(same.inputs, (std::vector<Value*>{half, w16}));  // already f16
  // Relu runs in float32 at O1: x is the source of the casts already in f32.
  EXPECT_EQ(relu->producer->inputs[0], x);
  EXPECT_EQ(relu->dtype(), kF32);
  // The result keeps its f16, by a Cast of the Relu's output.
  const Node& relu_back = *graph.FindOutput("relu")->value->producer;
  EXPECT_EQ(relu_back.op->name(), "Cast");
  EXPECT_EQ(relu_back.inputs[0], relu);
  // bf16 wanted in f16: neither bf16 nor its source, so the source is cast.
  const Node& x16 = *mixed->inputs[0]->producer;
  EXPECT_EQ(x16.op->name(), "Cast");
  EXPECT_EQ(x16.inputs[0], x);
  EXPECT_EQ(mixed->inputs[0]->dtype(), DType::kF16);
}

TEST(AutoMixedPrecisionTest, CompileRunsThePassAboveO0Only) {
  auto compile = [](AmpLevel level) {
    absl::StatusOr<train::NetGraph> net = train::BuildNetGraph(
        *train::models::LeNet5(10), train::SoftmaxCrossEntropy(), Mode::kEval, 2, kLeNetImage);
    EXPECT_TRUE(net.ok()) << net.status();
    CompileOptions options;
    // f32 is no low dtype: the pass fails where it runs.
    options.config.Set(AmpOptions{.level = level, .dtype = kF32});
    return Compile(std::move(net->graph), options).status();
  };
  EXPECT_TRUE(compile(AmpLevel::kO0).ok()) << compile(AmpLevel::kO0);
  const absl::Status status = compile(AmpLevel::kO2);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(status.ToString().find("amp_dtype must be bf16 or f16, got f32"), std::string::npos)
      << status;
}

TEST(AutoMixedPrecisionTest, ModelRejectsAnAmpDTypeThatIsNotLow) {
  train::Model model(train::models::LeNet5(10), train::SoftmaxCrossEntropy(), train::Momentum{},
                     {.batch_size = 2, .image_shape = kLeNetImage, .amp_dtype = DType::kF64});
  const absl::Status status = model.Compile();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(status.ToString().find("got f64"), std::string::npos) << status;
}

TEST(AutoMixedPrecisionTest, LevelNamesRoundTrip) {
  for (AmpLevel level : {AmpLevel::kO0, AmpLevel::kO1, AmpLevel::kO2, AmpLevel::kO3}) {
    AmpLevel parsed = AmpLevel::kO0;
    ASSERT_TRUE(ParseAmpLevel(AmpLevelName(level), &parsed)) << AmpLevelName(level);
    EXPECT_EQ(parsed, level);
  }
  AmpLevel parsed = AmpLevel::kO0;
  EXPECT_TRUE(ParseAmpLevel("o3", &parsed));
  EXPECT_EQ(parsed, AmpLevel::kO3);
  for (const char* bad : {"", "O", "O4", "02", "O22", "fp16"}) {
    EXPECT_FALSE(ParseAmpLevel(bad, &parsed)) << bad;
  }
}

}  // namespace
}  // namespace lockstep
