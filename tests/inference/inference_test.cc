#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "ckpt/graph_meta.h"
#include "core/file_io.h"
#include "graph/builder.h"
#include "inference/inference_model.h"
#include "inference/onnx_export.h"
#include "inference/run.h"
#include "trained_checkpoint.h"

namespace lockstep::inference {
namespace {

constexpr int64_t kImageSize = 32;

std::string TestDir() {
  static const std::string dir = [] {
    std::string d = (std::filesystem::temp_directory_path() /
                     ("lockstep_inference_test_" + std::to_string(::getpid())))
                        .string();
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

// Removes TestDir() when the binary ends.
class RemoveTestDir : public ::testing::Environment {
 public:
  void TearDown() override { std::filesystem::remove_all(TestDir()); }
};
const auto* const kRemoveTestDir = ::testing::AddGlobalTestEnvironment(new RemoveTestDir);

// Each model trained once for the whole binary.
const TrainedCheckpoint& Trained(const std::string& model) {
  static std::map<std::string, TrainedCheckpoint> trained;
  auto it = trained.find(model);
  if (it == trained.end()) {
    absl::StatusOr<TrainedCheckpoint> t = TrainAndSave(model, kImageSize, TestDir());
    LS_CHECK(t.ok()) << t.status().message();
    it = trained.emplace(model, *std::move(t)).first;
  }
  return it->second;
}

float MaxAbsDiff(const Tensor& a, const Tensor& b) {
  float max = 0.0f;
  for (int64_t i = 0; i < a.numel(); ++i) {
    max = std::max(max, std::abs(a.data<float>()[i] - b.data<float>()[i]));
  }
  return max;
}

int OpCount(const Graph& graph, const std::string& op) {
  int count = 0;
  for (const auto& node : graph.nodes()) count += node->op->name() == op ? 1 : 0;
  return count;
}

class InferenceTest : public ::testing::TestWithParam<std::string> {};

// The graph derived from the .meta, folded or not, gives Model::EvalBatch's logits.
TEST_P(InferenceTest, MatchesLockstepEvaluation) {
  const TrainedCheckpoint& t = Trained(GetParam());
  for (bool fold : {false, true}) {
    SCOPED_TRACE(fold ? "folded" : "unfolded");
    absl::StatusOr<InferenceModel> model = LoadInferenceModel(
        t.ckpt, t.meta, {.batch_size = t.images.dim(0), .fold_batch_norm = fold});
    ASSERT_TRUE(model.ok()) << model.status();
    EXPECT_EQ(model->image_shape, (Shape{3, kImageSize, kImageSize}));
    EXPECT_EQ(model->classes, t.logits.dim(1));
    for (const char* op : {"BatchNorm", "BatchNormRelu", "AddRelu", "MaxPoolWithArgmax", "Reorder",
                           "SoftmaxCrossEntropy", "Momentum"}) {
      EXPECT_EQ(OpCount(*model->graph, op), 0) << op;
    }
    if (fold) {
      EXPECT_EQ(OpCount(*model->graph, "BatchNormInference"), 0);
    }
    absl::StatusOr<std::unique_ptr<Executor>> executor = CompileInference(*model);
    ASSERT_TRUE(executor.ok()) << executor.status();
    absl::StatusOr<Tensor> logits = Infer(**executor, t.images);
    ASSERT_TRUE(logits.ok()) << logits.status();
    EXPECT_LT(MaxAbsDiff(*logits, t.logits), 1e-4f);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, InferenceTest, ::testing::Values("lenet", "resnet8"));

std::string CopyWith(const std::string& from, const std::string& name,
                     const std::function<void(std::string*)>& edit) {
  std::string bytes = *ReadWholeFile(from);
  edit(&bytes);
  const std::string path = TestDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(InferenceErrors, TruncatedAndTamperedCheckpoints) {
  const TrainedCheckpoint& t = Trained("lenet");
  const std::string truncated =
      CopyWith(t.ckpt, "truncated.ckpt", [](std::string* b) { b->resize(b->size() / 2); });
  absl::Status status = LoadInferenceModel(truncated, t.meta).status();
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("truncated.ckpt"), std::string::npos) << status;
  const std::string tampered =
      CopyWith(t.ckpt, "tampered.ckpt", [](std::string* b) { (*b)[b->size() / 2] ^= 0x40; });
  status = LoadInferenceModel(tampered, t.meta).status();
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("tampered.ckpt"), std::string::npos) << status;
}

TEST(InferenceErrors, MetaOfAnotherModel) {
  absl::Status status = LoadInferenceModel(Trained("lenet").ckpt, Trained("resnet8").meta).status();
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("does not fit the graph of"), std::string::npos) << status;
}

// LeNet's .meta with its first `from` node made a `to` node: DeriveInferenceGraph's status, and
// the node's name (empty when there is no `from` node).
absl::Status DeriveWithOpReplaced(const std::string& from, const std::string& to,
                                  std::string* name) {
  absl::StatusOr<proto::GraphDef> meta = ckpt::ReadGraphMeta(Trained("lenet").meta);
  LS_CHECK(meta.ok()) << meta.status();
  for (proto::NodeDef& node : *meta->mutable_nodes()) {
    if (node.op() == from) {
      node.set_op(to);
      *name = node.name();
      break;
    }
  }
  return DeriveInferenceGraph(*meta, 1).status();
}

// An op without an inference form is named with its node, and nothing is written.
TEST(InferenceErrors, UnsupportedOpNamesTheNode) {
  std::string name;
  absl::Status status = DeriveWithOpReplaced("Relu", "Gelu", &name);
  ASSERT_FALSE(name.empty());
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(status.message().find("Gelu node '" + name + "'"), std::string::npos) << status;

  absl::StatusOr<InferenceModel> model =
      LoadInferenceModel(Trained("lenet").ckpt, Trained("lenet").meta);
  ASSERT_TRUE(model.ok());
  Preprocessing wrong = ValidationPreprocessing(*model);
  wrong.class_names = {"only one"};
  const std::string out = TestDir() + "/never.onnx";
  EXPECT_FALSE(ExportOnnx(*model, wrong, out).ok());
  EXPECT_FALSE(std::filesystem::exists(out));
}

// A registered op without an inference form (a training-only op) fails the same way.
TEST(InferenceErrors, OpWithoutInferenceFormNamesTheNode) {
  std::string name;
  absl::Status status = DeriveWithOpReplaced("Flatten", "Reshape", &name);
  ASSERT_FALSE(name.empty());
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(status.message().find("Reshape node '" + name + "'"), std::string::npos) << status;
  EXPECT_NE(status.message().find("has no inference form"), std::string::npos) << status;
}

// An op of the inference graph without an ONNX translation fails naming its node.
TEST(InferenceErrors, OpWithoutOnnxFormNamesTheNode) {
  InferenceModel model{.name = "scaled", .graph = std::make_unique<Graph>()};
  Builder b(model.graph.get());
  Value* scaled = b.Op1("Scale", {b.Input("images", {1, 3, 4, 4})}, {{"scale", 2.0}});
  ASSERT_TRUE(b.status().ok()) << b.status();
  model.graph->AddOutput("logits", scaled, OutputKind::kResult);
  model.image_shape = {3, 4, 4};
  absl::Status status = ToOnnx(model, {}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(status.message().find("cannot export " + scaled->producer->Describe() +
                                  " to ONNX: no ONNX form"),
            std::string::npos)
      << status;
}

}  // namespace
}  // namespace lockstep::inference
