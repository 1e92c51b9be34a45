// The data-parallel compilation in one process (a world of one): where the AllReduce nodes go,
// how FuseAllReduce cuts buckets over the gradient buffer, and gradient accumulation.

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <set>
#include <string>

#include "core/allocator.h"
#include "core/half.h"
#include "graph/builder.h"
#include "graph/pass.h"
#include "ops/optimizer_math.h"
#include "parallel/ops/wire_bucket.h"
#include "tests/parallel/replica_training.h"

namespace lockstep::testing {
namespace {

using parallel::ParallelMode;

train::ModelOptions DataParallel(parallel::ParallelOptions parallel = {}) {
  parallel.mode = ParallelMode::kDataParallel;
  return {.batch_size = 8, .parallel = parallel, .context = WorldOfOne()};
}

std::vector<const Node*> AllReduceNodes(const train::Model& model) {
  std::vector<const Node*> nodes;
  for (const auto& node : model.train_executor()->graph().nodes()) {
    if (node->op->name() == "AllReduce") nodes.push_back(node.get());
  }
  return nodes;
}

// The step's plan: every bucket's AllReduce runs behind the backward (asynchronous), and each
// bucket's optimizer update (one Momentum node over the bucket's parameters) waits for exactly
// that bucket, nothing else waits for them, so communication overlaps the rest of the backward.
// The CUDA executor keeps the same plan with stream-event waits.
TEST(DataParallelTest, EachBucketsUpdateWaitsForThatBucketOnly) {
  train::Model model = MakeLeNet(DataParallel({.fusion_threshold_mb = 0.05}));
  ASSERT_TRUE(model.Compile().ok());
  std::set<const Node*> updated_buckets;
  size_t updated_parameters = 0;
  for (const Executor::StepWaits& step : model.train_executor()->WaitPlan()) {
    const std::string& op = step.node->op->name();
    if (op == "AllReduce") {
      EXPECT_TRUE(step.asynchronous) << step.node->Describe();
    }
    if (op != "Momentum") {
      EXPECT_TRUE(step.waits_for.empty()) << step.node->Describe();
      continue;
    }
    const math::MomentumInputs in(step.node->inputs.size());
    ASSERT_EQ(step.waits_for.size(), 1u) << step.node->Describe();
    const Node* bucket = step.waits_for[0];
    EXPECT_EQ(bucket->op->name(), "AllReduce");
    for (size_t t = 0; t < in.tensors; ++t) {
      EXPECT_EQ(step.node->inputs[in.grad(t)]->producer, bucket) << step.node->Describe();
    }
    EXPECT_TRUE(updated_buckets.insert(bucket).second) << "two updates wait for one bucket";
    updated_parameters += in.tensors;
  }
  EXPECT_EQ(updated_buckets.size(), AllReduceNodes(model).size());
  EXPECT_EQ(updated_parameters,
            model.train_executor()->graph().InputNodes(InputRole::kParameter).size());
}

TEST(DataParallelTest, EveryGradientIsReducedOnceInContiguousBuckets) {
  train::Model model = MakeLeNet(DataParallel({.fusion_threshold_mb = 0.05}));
  ASSERT_TRUE(model.Compile().ok());
  const Graph& graph = model.train_executor()->graph();
  std::vector<const Node*> buckets = AllReduceNodes(model);
  ASSERT_GT(buckets.size(), 1u);
  size_t gradients = 0;
  int64_t bytes = 0;
  for (size_t b = 0; b < buckets.size(); ++b) {
    const Node& node = *buckets[b];
    EXPECT_EQ(node.attrs.GetInt("fusion"), static_cast<int64_t>(b + 1));
    EXPECT_EQ(node.attrs.GetString("op"), "sum");
    // Inputs in memory order, back to back (up to alignment) in the gradient buffer.
    size_t end = node.inputs[0]->alloc.offset;
    for (const Value* input : node.inputs) {
      EXPECT_EQ(input->alloc.region, Region::kGradients) << node.Describe();
      EXPECT_EQ(input->alloc.offset, AlignUp(end)) << node.Describe();
      end = input->alloc.offset + input->bytes();
    }
    if (node.inputs.size() > 1) {
      EXPECT_LE(node.attrs.GetInt("bytes"), 0.05 * 1024 * 1024) << node.Describe();
    }
    gradients += node.inputs.size();
    bytes += node.attrs.GetInt("bytes");
  }
  EXPECT_EQ(gradients, graph.InputNodes(InputRole::kParameter).size());
  EXPECT_EQ(static_cast<size_t>(bytes), graph.plan().gradients);
  // Buckets come in backward order: the first one holds the last parameter's gradient.
  const Node* last_parameter = graph.InputNodes(InputRole::kParameter).back();
  EXPECT_EQ(buckets[0]->outputs.back().get(),
            graph.FindOutput(GradientName(last_parameter->name))->value);
  EXPECT_NE(DumpGraph(graph).find("fusion=1"), std::string::npos);
}

TEST(DataParallelTest, SplitIndicesChooseTheBuckets) {
  train::Model model = MakeLeNet(DataParallel({.all_reduce_fusion_config = {2, 5}}));
  ASSERT_TRUE(model.Compile().ok());
  std::vector<const Node*> buckets = AllReduceNodes(model);
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[0]->inputs.size(), 2u);
  EXPECT_EQ(buckets[1]->inputs.size(), 3u);

  train::Model bad = MakeLeNet(DataParallel({.all_reduce_fusion_config = {3, 3}}));
  absl::Status status = bad.Compile();
  EXPECT_NE(status.message().find("all_reduce_fusion_config {3, 3} must be increasing split"),
            std::string::npos)
      << status;
}

// ParallelOptions::allreduce_dtype: the same buckets cross the wire in bf16 or f16, half the
// bytes of float32, and no other dtype is accepted.
TEST(DataParallelTest, AllReduceDTypeHalvesTheWireBytes) {
  std::vector<std::vector<int64_t>> bytes;
  for (DType wire : {DType::kF32, DType::kBF16, DType::kF16}) {
    train::Model model =
        MakeLeNet(DataParallel({.fusion_threshold_mb = 0.05, .allreduce_dtype = wire}));
    ASSERT_TRUE(model.Compile().ok()) << DTypeName(wire);
    bytes.emplace_back();
    for (const Node* node : AllReduceNodes(model)) {
      EXPECT_EQ(node->attrs.GetString("wire_dtype"), DTypeName(wire)) << node->Describe();
      EXPECT_EQ(node->inputs[0]->dtype(), DType::kF32) << node->Describe();
      bytes.back().push_back(node->attrs.GetInt("bytes"));
    }
  }
  ASSERT_GT(bytes[0].size(), 1u);
  for (size_t b = 0; b < bytes[0].size(); ++b) {
    EXPECT_EQ(bytes[1][b] * 2, bytes[0][b]) << "bucket " << b + 1;
    EXPECT_EQ(bytes[2][b] * 2, bytes[0][b]) << "bucket " << b + 1;
  }

  train::Model bad = MakeLeNet(DataParallel({.allreduce_dtype = DType::kI32}));
  absl::Status status = bad.Compile();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(status.message().find("ParallelOptions::allreduce_dtype: f32 tensors are reduced in "
                                  "f32, bf16 or f16, not in i32"),
            std::string::npos)
      << status;
}

// A bucket whose gradients are not back to back crosses as one wire buffer all the same: each
// gradient is rounded to the wire dtype once (a world of one reduces nothing) and converted back.
TEST(DataParallelTest, WireBucketOfScatteredTensorsRoundsEachElementOnce) {
  Graph graph;
  Builder builder(&graph);
  Value* a = builder.Input("a", {3});
  Value* b = builder.Input("b", {5});
  const Node* bf16 =
      builder.Op1("AllReduce", {a, b}, {{"wire_dtype", std::string("bf16")}})->producer;
  const Node* f32 = builder.Op1("AllReduce", {a}, {{"wire_dtype", std::string("f32")}})->producer;
  ASSERT_TRUE(builder.status().ok()) << builder.status();

  absl::StatusOr<std::unique_ptr<parallel::WireBucket>> none =
      parallel::WireBucket::For(*f32, parallel::Span{}, Device::CPU());
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(*none, nullptr);
  absl::StatusOr<std::unique_ptr<parallel::WireBucket>> wire =
      parallel::WireBucket::For(*bf16, parallel::Span{}, Device::CPU());
  ASSERT_TRUE(wire.ok()) << wire.status();
  ASSERT_NE(*wire, nullptr);
  EXPECT_EQ((*wire)->wire().dtype(), DType::kBF16);
  EXPECT_EQ((*wire)->wire().numel(), 8);

  // 1 + k/1024: bf16 keeps 7 fraction bits, so most of them round.
  const std::vector<Tensor> tensors = {Tensor::Empty({3}, DType::kF32),
                                       Tensor::Empty({5}, DType::kF32)};
  std::vector<float> original;
  for (const Tensor& tensor : tensors) {
    for (int64_t i = 0; i < tensor.numel(); ++i) {
      original.push_back(1.0f + static_cast<float>(original.size()) * 0x1p-10f);
      tensor.data<float>()[i] = original.back();
    }
  }
  (*wire)->Bind(tensors);
  ASSERT_TRUE((*wire)->AllReduceOnHost(*WorldOfOne().HostWorld(), parallel::ReduceOp::kSum).ok());
  size_t k = 0;
  int rounded = 0;
  for (const Tensor& tensor : tensors) {
    for (int64_t i = 0; i < tensor.numel(); ++i, ++k) {
      const float expected = ToFloat(FloatTo<BFloat16>(original[k]));
      EXPECT_EQ(tensor.data<float>()[i], expected) << "element " << k;
      rounded += expected != original[k] ? 1 : 0;
    }
  }
  EXPECT_GT(rounded, 0);
}

TEST(DataParallelTest, WorldOfOneTrainsExactlyAsStandAlone) {
  const std::vector<train::Batch> batches = GlobalBatches(4, 8);
  train::Model parallel = MakeLeNet(DataParallel());
  train::Model alone = MakeLeNet({.batch_size = 8});
  ASSERT_TRUE(TrainOnRows(parallel, batches, 0, 8).ok());
  ASSERT_TRUE(TrainOnRows(alone, batches, 0, 8).ok());
  EXPECT_EQ(MaxRelativeDifference(parallel, alone), 0.0);
}

void ExpectAccumulationMatchesOneLargeBatch(
    const std::function<train::Model(train::ModelOptions)>& make) {
  const std::vector<train::Batch> batches = GlobalBatches(10, 32);
  train::Model accumulated = make({.batch_size = 8, .accumulation_steps = 4});
  train::Model large = make({.batch_size = 32});
  ASSERT_TRUE(TrainOnRows(accumulated, batches, 0, 32).ok());
  ASSERT_TRUE(TrainOnRows(large, batches, 0, 32).ok());
  EXPECT_EQ(accumulated.global_step(), 10);
  EXPECT_LE(MaxRelativeDifference(accumulated, large), 1e-5);
  train::Model initial = make({.batch_size = 32});
  ASSERT_TRUE(initial.Compile().ok());
  EXPECT_GT(MaxRelativeDifference(accumulated, initial), 1e-3) << "training moved the parameters";
}

TEST(DataParallelTest, AccumulatedMicroBatchesMatchOneLargeBatch) {
  ExpectAccumulationMatchesOneLargeBatch(MakeLeNet);
}

// The accumulators of blocked convolution weights take their gradients' layout.
TEST(DataParallelTest, AccumulatedBlockedWeightsMatchOneLargeBatch) {
  ExpectAccumulationMatchesOneLargeBatch(
      [](train::ModelOptions options) { return MakeConvNet(options, /*batch_norm=*/false); });
}

}  // namespace
}  // namespace lockstep::testing
