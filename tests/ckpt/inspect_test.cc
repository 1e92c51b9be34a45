// What lockstep-ckpt reports: tensor statistics (every numeric type), differences, the graph
// summary, and the verification of a saved step across ranks.

#include "ckpt/inspect.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_join.h"
#include "ckpt/graph_meta.h"
#include "ckpt/manager.h"
#include "ckpt/naming.h"
#include "graph/serialize.h"
#include "tests/ckpt/test_util.h"

namespace lockstep::ckpt {
namespace {

using testing::PatternTensor;
using testing::TempDir;

template <typename T>
Entry MakeEntry(const char* type, std::vector<T> values, std::string name = "t") {
  Entry entry{.name = std::move(name), .type = FindTensorType(type)};
  entry.shape = {static_cast<int64_t>(values.size())};
  entry.content.resize(values.size() * sizeof(T));
  std::memcpy(entry.content.data(), values.data(), entry.content.size());
  return entry;
}

TEST(CkptInspectTest, StatsOfKnownValues) {
  const TensorStats stats = ComputeStats(MakeEntry<float>("Float32", {1, 2, 3, 4, NAN}));
  EXPECT_EQ(stats.count, 4);
  EXPECT_EQ(stats.nan_count, 1);
  EXPECT_EQ(stats.min, 1.0);
  EXPECT_EQ(stats.max, 4.0);
  EXPECT_EQ(stats.mean, 2.5);
  EXPECT_DOUBLE_EQ(stats.std, std::sqrt(1.25));
  const TensorStats ints = ComputeStats(MakeEntry<int64_t>("Int64", {-5, 7}));
  EXPECT_EQ(ints.min, -5.0);
  EXPECT_EQ(ints.max, 7.0);
}

TEST(CkptInspectTest, HalfPrecisionTypesDecode) {
  // Float16: 1, -2, 65504 (largest), 2^-24 (smallest subnormal), inf.
  const TensorStats half =
      ComputeStats(MakeEntry<uint16_t>("Float16", {0x3c00, 0xc000, 0x7bff, 0x0001}));
  EXPECT_EQ(half.min, -2.0);
  EXPECT_EQ(half.max, 65504.0);
  EXPECT_EQ(half.mean, (1.0 - 2.0 + 65504.0 + std::ldexp(1.0, -24)) / 4);
  EXPECT_EQ(ComputeStats(MakeEntry<uint16_t>("Float16", {0x7c00})).max, HUGE_VAL);
  // BFloat16: 1, -3.5.
  const TensorStats bf16 = ComputeStats(MakeEntry<uint16_t>("BFloat16", {0x3f80, 0xc060}));
  EXPECT_EQ(bf16.max, 1.0);
  EXPECT_EQ(bf16.min, -3.5);
}

TEST(CkptInspectTest, DiffGivesMaxAbsoluteAndRelativeDifference) {
  const TensorDiff diff = DiffEntries(MakeEntry<float>("Float32", {1, 2, 4, NAN}),
                                      MakeEntry<float>("Float32", {1, 2.5, 3, NAN}));
  EXPECT_TRUE(diff.problem.empty());
  EXPECT_EQ(diff.max_abs, 1.0);
  EXPECT_EQ(diff.max_rel, 0.25);
  EXPECT_FALSE(diff.Exceeds(1.0));
  EXPECT_TRUE(diff.Exceeds(0.5));
  EXPECT_EQ(
      DiffEntries(MakeEntry<float>("Float32", {NAN}), MakeEntry<float>("Float32", {0})).max_abs,
      HUGE_VAL);
  const TensorDiff types =
      DiffEntries(MakeEntry<float>("Float32", {1}), MakeEntry<int32_t>("Int32", {1}));
  EXPECT_EQ(types.problem, "Float32[1] against Int32[1]");
}

TEST(CkptInspectTest, DiffOfCheckpointsListsTensorsOfEitherFile) {
  CheckpointData a{.path = "a.ckpt"};
  CheckpointData b{.path = "b.ckpt"};
  a.entries = {MakeEntry<float>("Float32", {1}, "w"), MakeEntry<float>("Float32", {1}, "only_a")};
  b.entries = {MakeEntry<float>("Float32", {1}, "only_b"), MakeEntry<float>("Float32", {1}, "w")};
  const std::vector<TensorDiff> diffs = DiffCheckpoints(a, b);
  ASSERT_EQ(diffs.size(), 3u);
  EXPECT_FALSE(diffs[0].Exceeds(0.0));
  EXPECT_EQ(diffs[1].problem, "only in a.ckpt");
  EXPECT_EQ(diffs[2].problem, "only in b.ckpt");
}

TEST(CkptInspectTest, GraphSummaryCountsOpsAndAllReduceFusionGroups) {
  lockstep::proto::GraphDef graph;
  auto add = [&](const char* op, int64_t group, int64_t bytes) {
    lockstep::proto::NodeDef* node = graph.add_nodes();
    node->set_op(op);
    if (group >= 0) (*node->mutable_attrs())["fusion"].set_i(group);
    if (bytes >= 0) (*node->mutable_attrs())["bytes"].set_i(bytes);
  };
  add("Conv2D", -1, -1);
  add("Conv2D", -1, -1);
  add("AllReduce", 1, 4096);
  add("AllReduce", 0, 100);
  add("AllReduce", 1, 1000);
  lockstep::proto::Parameter* parameter = graph.add_parameters();
  parameter->add_dims(3);
  parameter->add_dims(4);
  parameter->set_bytes(48);
  graph.set_fingerprint(Fingerprint(graph));

  const GraphSummary summary = SummarizeGraph(graph);
  EXPECT_EQ(summary.op_counts.at("Conv2D"), 2);
  EXPECT_EQ(summary.op_counts.at("AllReduce"), 3);
  ASSERT_EQ(summary.fusion_groups.size(), 2u);
  EXPECT_EQ(summary.fusion_groups[0].group, 0);
  EXPECT_EQ(summary.fusion_groups[1].nodes, 2);
  EXPECT_EQ(summary.fusion_groups[1].bytes, 5096);
  EXPECT_EQ(summary.parameter_elements, 12);
  EXPECT_TRUE(summary.fingerprint_matches);
  graph.mutable_nodes(0)->set_op("Relu");
  EXPECT_FALSE(SummarizeGraph(graph).fingerprint_matches);
}

// Two ranks save two steps with identical replicas (and per-rank data positions), and the graph
// meta; rank 0 commits each step.
class VerifyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    graph_.add_nodes()->set_op("Relu");
    graph_.set_fingerprint(Fingerprint(graph_));
    for (int rank = 0; rank < 2; ++rank) {
      managers_.emplace_back(CheckpointConfig{.directory = dir_.path()}, "net", rank, 2);
      ASSERT_TRUE(managers_.back().SaveGraphMeta(graph_).ok());
    }
    for (int64_t step : {10, 20}) {
      std::vector<WrittenFile> files;
      for (int rank = 0; rank < 2; ++rank) {
        RankState state{.epoch = 1, .global_step = step, .step_in_epoch = step};
        state.tensors = {{"w", PatternTensor({16}, DType::kF32, static_cast<int>(step))}};
        state.scalars = {{"data_position", rank}};
        files.push_back(*managers_[rank].Save(state));
        last_state_ = state;
      }
      ASSERT_TRUE(
          managers_[0].Commit(last_state_, files, graph_.fingerprint(), {"data_position"}).ok());
    }
  }

  VerifyReport VerifyNewest() {
    absl::StatusOr<proto::Manifest> manifest = FindManifest(dir_.path(), "", std::nullopt);
    EXPECT_TRUE(manifest.ok()) << manifest.status();
    return manifest.ok() ? VerifyStep(dir_.path(), *manifest) : VerifyReport{};
  }

  // Replaces rank `rank`'s file of step 20 with one holding `w`.
  void RewriteRankFile(int rank, const Tensor& w) {
    RankState state = last_state_;
    state.tensors = {{"w", w}};
    ASSERT_TRUE(SaveRankState(dir_.Join(CheckpointFileName("net", rank, 1, 20)), state).ok());
  }

  static std::string Problems(const VerifyReport& report) {
    return absl::StrJoin(report.problems, "\n");
  }

  TempDir dir_;
  lockstep::proto::GraphDef graph_;
  std::vector<CheckpointManager> managers_;
  RankState last_state_;
};

TEST_F(VerifyTest, AGoodStepVerifies) {
  const VerifyReport report = VerifyNewest();
  EXPECT_TRUE(report.problems.empty()) << Problems(report);
  EXPECT_EQ(report.checked.size(), 2u);
  absl::StatusOr<proto::Manifest> older = FindManifest(dir_.path(), "net", 10);
  ASSERT_TRUE(older.ok());
  EXPECT_TRUE(VerifyStep(dir_.path(), *older).problems.empty());
  EXPECT_NE(FindManifest(dir_.path(), "", 15).status().message().find("complete steps: 10, 20"),
            std::string::npos);
}

TEST_F(VerifyTest, NamesAMissingFile) {
  ASSERT_TRUE(RemoveFile(dir_.Join("net_1-1_20.ckpt")).ok());
  EXPECT_NE(
      Problems(VerifyNewest()).find("rank 1: " + dir_.Join("net_1-1_20.ckpt") + " is missing"),
      std::string::npos);
}

TEST_F(VerifyTest, NamesACorruptFile) {
  std::string bytes = testing::ReadBytes(dir_.Join("net_0-1_20.ckpt"));
  bytes[20] = static_cast<char>(bytes[20] ^ 1);
  testing::WriteBytes(dir_.Join("net_0-1_20.ckpt"), bytes);
  EXPECT_NE(
      Problems(VerifyNewest()).find("rank 0: " + dir_.Join("net_0-1_20.ckpt") + ": CRC mismatch"),
      std::string::npos)
      << Problems(VerifyNewest());
}

TEST_F(VerifyTest, NamesAReplicaThatDiffers) {
  Tensor w = PatternTensor({16}, DType::kF32, 20);
  w.data<float>()[3] = -w.data<float>()[3];  // the pattern bytes may hold a huge value
  RewriteRankFile(1, w);
  const std::string problems = Problems(VerifyNewest());
  EXPECT_NE(problems.find("rank 1 differs from rank 0 in 1 tensor(s): 'w'"), std::string::npos)
      << problems;
  EXPECT_NE(problems.find("the manifest says"), std::string::npos) << "the CRC changed too";
}

TEST_F(VerifyTest, NamesAGraphMetaOfAnotherGraph) {
  lockstep::proto::GraphDef other;
  other.add_nodes()->set_op("Scale");
  other.set_fingerprint(Fingerprint(other));
  ASSERT_TRUE(WriteGraphMeta(dir_.Join("net_1-graph.meta"), other).ok());
  EXPECT_NE(Problems(VerifyNewest())
                .find("net_1-graph.meta: graph fingerprint " + other.fingerprint() +
                      ", the manifest says " + graph_.fingerprint()),
            std::string::npos);
}

// A corrupt world size is one problem naming the first missing ranks, not one per rank
// (tests/fuzz/manifest_fuzzer found a world size of 1e9 running out of memory).
TEST_F(VerifyTest, AHugeWorldSizeIsOneProblem) {
  absl::StatusOr<proto::Manifest> manifest = FindManifest(dir_.path(), "", std::nullopt);
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  manifest->set_world_size(2000000000);
  const VerifyReport report = VerifyStep(dir_.path(), *manifest);
  ASSERT_EQ(report.problems.size(), 1u) << Problems(report);
  EXPECT_EQ(report.problems[0],
            "the manifest lists no file for rank 2, 3, 4, 5, 6 and 1999999993 more");
}

// Hosts without a shared file system: rank 1's files on another host's disk, the manifests on
// rank 0's; verify takes both directories.
TEST_F(VerifyTest, AStepSpreadOverTwoHostsVerifies) {
  TempDir host_b;
  for (const std::string name : {"net_1-1_20.ckpt", "net_1-1_10.ckpt", "net_1-graph.meta"}) {
    std::filesystem::rename(dir_.Join(name), host_b.Join(name));
  }
  const std::vector<std::string> both = {dir_.path(), host_b.path()};
  absl::StatusOr<proto::Manifest> manifest = FindManifest(both, "", std::nullopt);
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  VerifyReport report = VerifyStep(both, *manifest);
  EXPECT_TRUE(report.problems.empty()) << Problems(report);
  EXPECT_EQ(report.checked, (std::vector<std::string>{dir_.Join("net_0-1_20.ckpt"),
                                                      host_b.Join("net_1-1_20.ckpt")}));
  EXPECT_NE(Problems(VerifyStep(dir_.path(), *manifest)).find(" is missing"), std::string::npos);

  ASSERT_TRUE(RemoveFile(host_b.Join("net_1-1_20.ckpt")).ok());
  EXPECT_NE(
      Problems(VerifyStep(both, *manifest))
          .find("rank 1: net_1-1_20.ckpt is in none of " + dir_.path() + ", " + host_b.path()),
      std::string::npos);
}

// A copy of the manifest on another host that says something else is an error.
TEST_F(VerifyTest, ManifestCopiesThatDifferAreAnError) {
  TempDir host_b;
  proto::Manifest manifest = *FindManifest(dir_.path(), "", std::nullopt);
  manifest.set_world_size(3);
  ASSERT_TRUE(WriteManifest(host_b.path(), manifest).ok());
  absl::StatusOr<proto::Manifest> found =
      FindManifest(std::vector<std::string>{dir_.path(), host_b.path()}, "", std::nullopt);
  EXPECT_NE(found.status().message().find("the manifests of step 20 in " + dir_.path() + " and " +
                                          host_b.path() + " differ"),
            std::string::npos)
      << found.status();
}

TEST_F(VerifyTest, NoManifestMeansNoCompleteStep) {
  TempDir empty;
  EXPECT_NE(FindManifest(empty.path(), "", std::nullopt).status().message().find("no manifest"),
            std::string::npos);
}

}  // namespace
}  // namespace lockstep::ckpt
