// File naming, when to save, pruning, and the manifest protocol with several ranks simulated in
// one process: each rank saves its file, then rank 0 commits the step and the others copy its
// manifest where their directory lacks it.

#include "ckpt/manager.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "ckpt/graph_meta.h"
#include "ckpt/naming.h"
#include "core/file_io.h"
#include "graph/serialize.h"
#include "tests/ckpt/test_util.h"

namespace lockstep::ckpt {
namespace {

using testing::Bytes;
using testing::PatternTensor;
using testing::ReadBytes;
using testing::TempDir;

constexpr char kPrefix[] = "resnet50";

TEST(CkptNamingTest, NamesFilesAsMindSporeDoes) {
  EXPECT_EQ(CheckpointFileName("resnet50", 3, 2, 10), "resnet50_3-2_10.ckpt");
  EXPECT_EQ(GraphMetaFileName("resnet50", 3), "resnet50_3-graph.meta");
  EXPECT_EQ(ManifestFileName("resnet50", 2, 10), "resnet50-2_10.manifest");
  std::optional<ParsedName> parsed = ParseCheckpointFileName("my_net_12-7_350.ckpt");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->prefix, "my_net");
  EXPECT_EQ(parsed->rank, 12);
  EXPECT_EQ(parsed->epoch, 7);
  EXPECT_EQ(parsed->step_in_epoch, 350);
  EXPECT_EQ(ParseManifestFileName("my_net-7_350.manifest")->prefix, "my_net");
  for (const char* other : {"resnet50_3-graph.meta", "resnet50-2_10.manifest", "x.ckpt",
                            "resnet50_3-2_10.ckpt.tmp", "resnet50_a-2_10.ckpt"}) {
    EXPECT_FALSE(ParseCheckpointFileName(other).has_value()) << other;
  }
}

TEST(CkptManagerTest, ShouldSaveEveryNStepsAndEveryMEpochs) {
  CheckpointManager by_steps({.save_checkpoint_steps = 5}, kPrefix, 0, 1);
  EXPECT_FALSE(by_steps.ShouldSave(4, 1, false));
  EXPECT_TRUE(by_steps.ShouldSave(10, 1, false));
  CheckpointManager by_epochs({.save_checkpoint_steps = 0, .save_checkpoint_epochs = 2}, kPrefix, 0,
                              1);
  EXPECT_FALSE(by_epochs.ShouldSave(10, 2, false));
  EXPECT_FALSE(by_epochs.ShouldSave(10, 1, true));
  EXPECT_TRUE(by_epochs.ShouldSave(10, 2, true));
}

// `world` managers over one directory and their ranks' states.
struct SimulatedRanks {
  SimulatedRanks(const std::string& dir, int world, bool all_ranks = true, int keep = 5,
                 const std::string& run = "run-a")
      : SimulatedRanks(std::vector<std::string>(world, dir), all_ranks, keep, run) {}
  // A directory per rank, as on hosts that share no file system.
  explicit SimulatedRanks(const std::vector<std::string>& dirs, bool all_ranks = true, int keep = 5,
                          const std::string& run = "run-a") {
    const int world = static_cast<int>(dirs.size());
    for (int rank = 0; rank < world; ++rank) {
      managers.emplace_back(
          CheckpointConfig{
              .keep_checkpoint_max = keep, .all_ranks = all_ranks, .directory = dirs[rank]},
          kPrefix, rank, world, run);
      EXPECT_TRUE(managers.back().BeginRun().ok());
    }
  }

  static RankState State(int64_t epoch, int64_t step_in_epoch, int seed) {
    RankState state;
    state.epoch = epoch;
    state.step_in_epoch = step_in_epoch;
    state.global_step = (epoch - 1) * 100 + step_in_epoch;
    state.tensors = {{"w", PatternTensor({8, 4}, DType::kF32, seed)}};
    state.scalars = {{"data_position", state.global_step * 32}};
    return state;
  }

  // Every saving rank saves the step (rank r's weights patterned by r + step); rank 0 commits,
  // the other saving ranks copy its manifest, then the saving ranks prune.
  std::vector<WrittenFile> SaveStep(int64_t epoch, int64_t step, bool commit = true) {
    std::vector<WrittenFile> files;
    for (int rank = 0; rank < static_cast<int>(managers.size()); ++rank) {
      if (!managers[rank].SavesOnThisRank()) continue;
      absl::StatusOr<WrittenFile> file = managers[rank].Save(State(epoch, step, rank + step));
      EXPECT_TRUE(file.ok()) << file.status();
      files.push_back(*file);
    }
    if (!commit) return files;
    absl::StatusOr<proto::Manifest> manifest =
        managers[0].Commit(State(epoch, step, 0), files, "0123456789abcdef");
    EXPECT_TRUE(manifest.ok()) << manifest.status();
    for (size_t rank = 1; rank < files.size(); ++rank) {
      absl::Status status = managers[rank].CopyManifest(*manifest);
      EXPECT_TRUE(status.ok()) << status;
    }
    for (CheckpointManager& manager : managers) {
      if (manager.SavesOnThisRank()) {
        EXPECT_TRUE(manager.Prune().ok());
      }
    }
    return files;
  }

  std::vector<CheckpointManager> managers;
};

// What resume does for a rank alone: the newest step it can resume from; false when none.
absl::StatusOr<bool> ResumeNewest(const CheckpointManager& manager, RankState* state) {
  LS_ASSIGN_OR_RETURN(std::vector<proto::Manifest> steps, manager.ResumableSteps());
  if (steps.empty()) return false;
  LS_RETURN_IF_ERROR(manager.Resume(steps.back(), state));
  return true;
}

TEST(CkptManagerTest, OnlyStepsWithAManifestAreComplete) {
  TempDir dir;
  SimulatedRanks run(dir.path(), 3);
  EXPECT_TRUE(absl::IsNotFound(LatestCompleteStep(dir.path(), kPrefix).status()));
  run.SaveStep(1, 10);
  run.SaveStep(1, 20, /*commit=*/false);  // every rank saved, rank 0 never committed
  absl::StatusOr<proto::Manifest> latest = LatestCompleteStep(dir.path(), kPrefix);
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(latest->global_step(), 10);
  EXPECT_EQ(latest->world_size(), 3);
  ASSERT_EQ(latest->files_size(), 3);
  EXPECT_EQ(latest->files(2).file(), "resnet50_2-1_10.ckpt");
  EXPECT_EQ(latest->files(2).crc32(), *ReadTrailerCrc(dir.Join("resnet50_2-1_10.ckpt")));
  EXPECT_EQ(latest->graph_fingerprint(), "0123456789abcdef");
}

TEST(CkptManagerTest, AStepWithAMissingFileIsNotComplete) {
  TempDir dir;
  SimulatedRanks run(dir.path(), 2);
  run.SaveStep(1, 10);
  run.SaveStep(1, 20);
  ASSERT_TRUE(RemoveFile(dir.Join("resnet50_1-1_20.ckpt")).ok());
  EXPECT_EQ(LatestCompleteStep(dir.path(), kPrefix)->global_step(), 10);
}

TEST(CkptManagerTest, CommitRefusesWhenARankDidNotSave) {
  TempDir dir;
  SimulatedRanks run(dir.path(), 3);
  std::vector<WrittenFile> files = run.SaveStep(1, 10, /*commit=*/false);
  files.pop_back();
  absl::Status status = run.managers[0].Commit(SimulatedRanks::State(1, 10, 0), files, "").status();
  EXPECT_NE(status.message().find("2 rank files for 3 saving rank(s)"), std::string::npos)
      << status;
  EXPECT_FALSE(run.managers[1].Commit(SimulatedRanks::State(1, 10, 0), files, "").ok()) << "rank 1";
}

TEST(CkptManagerTest, EveryRankResumesItsOwnFileFromTheNewestCompleteStep) {
  TempDir dir;
  SimulatedRanks run(dir.path(), 3);
  run.SaveStep(1, 10);
  run.SaveStep(2, 5);
  run.SaveStep(2, 15, /*commit=*/false);
  for (int rank = 0; rank < 3; ++rank) {
    RankState state = SimulatedRanks::State(0, 0, 999);
    absl::StatusOr<bool> resumed = ResumeNewest(run.managers[rank], &state);
    ASSERT_TRUE(resumed.ok()) << resumed.status();
    EXPECT_TRUE(*resumed);
    EXPECT_EQ(state.epoch, 2);
    EXPECT_EQ(state.step_in_epoch, 5);
    EXPECT_EQ(state.global_step, 105);
    EXPECT_EQ(state.scalars.at("data_position"), 105 * 32);
    EXPECT_EQ(Bytes(state.tensors[0].tensor),
              Bytes(SimulatedRanks::State(2, 5, rank + 5).tensors[0].tensor));
  }
}

TEST(CkptManagerTest, ResumeWithNothingSavedReturnsFalse) {
  TempDir dir;
  SimulatedRanks run(dir.Join("not_yet_created"), 1);
  RankState state = SimulatedRanks::State(1, 1, 0);
  absl::StatusOr<bool> resumed = ResumeNewest(run.managers[0], &state);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_FALSE(*resumed);
}

TEST(CkptManagerTest, ResumingAnotherModelsDirectoryFailsNamingIt) {
  TempDir dir;
  SimulatedRanks run(dir.path(), 1);
  run.SaveStep(1, 10);
  const CheckpointManager other({.directory = dir.path()}, "lenet", 0, 1);
  RankState state = SimulatedRanks::State(1, 1, 0);
  absl::StatusOr<bool> resumed = ResumeNewest(other, &state);
  EXPECT_EQ(resumed.status().message(),
            absl::StrCat(dir.path(),
                         " holds checkpoints of resnet50, none of lenet: resume with "
                         "the model that wrote them, or from another directory"));
  // With its own steps beside the other model's, a model resumes from its own.
  SimulatedRanks lenet(dir.path(), 1);
  lenet.managers = {CheckpointManager({.directory = dir.path()}, "lenet", 0, 1)};
  lenet.SaveStep(1, 5);
  EXPECT_TRUE(*ResumeNewest(other, &state));
}

TEST(CkptManagerTest, RankZeroAloneSavesAndEveryRankResumesFromIt) {
  TempDir dir;
  SimulatedRanks run(dir.path(), 4, /*all_ranks=*/false);
  EXPECT_FALSE(run.managers[2].SavesOnThisRank());
  EXPECT_FALSE(run.managers[2].Save(SimulatedRanks::State(1, 1, 0)).ok());
  run.SaveStep(1, 10);
  EXPECT_EQ(ListFiles(dir.path())->size(), 2u);  // rank 0's file and the manifest
  RankState state = SimulatedRanks::State(0, 0, 999);
  ASSERT_TRUE(*ResumeNewest(run.managers[3], &state));
  EXPECT_EQ(Bytes(state.tensors[0].tensor),
            Bytes(SimulatedRanks::State(1, 10, 10).tensors[0].tensor));
}

// Data-parallel replicas hold the same parameters, so a job can resume on more ranks than saved:
// rank r takes saved rank (r mod 2)'s file.
TEST(CkptManagerTest, MoreRanksThanSavedResumeFromTheSavedRanksFiles) {
  TempDir dir;
  SimulatedRanks saved(dir.path(), 2);
  saved.SaveStep(1, 10);
  SimulatedRanks resumed(dir.path(), 4);
  for (int rank = 0; rank < 4; ++rank) {
    RankState state = SimulatedRanks::State(0, 0, 999);
    absl::StatusOr<bool> found = ResumeNewest(resumed.managers[rank], &state);
    ASSERT_TRUE(found.ok()) << found.status();
    EXPECT_TRUE(*found);
    EXPECT_EQ(Bytes(state.tensors[0].tensor),
              Bytes(SimulatedRanks::State(1, 10, rank % 2 + 10).tensors[0].tensor))
        << "rank " << rank;
  }
}

TEST(CkptManagerTest, KeepCheckpointMaxDeletesTheOldestStepsAndTheirManifests) {
  TempDir dir;
  SimulatedRanks run(dir.path(), 2, /*all_ranks=*/true, /*keep=*/2);
  for (int64_t step = 1; step <= 4; ++step) run.SaveStep(1, step * 10);
  const std::vector<std::string> expected = {"resnet50-1_30.manifest", "resnet50-1_40.manifest",
                                             "resnet50_0-1_30.ckpt",   "resnet50_0-1_40.ckpt",
                                             "resnet50_1-1_30.ckpt",   "resnet50_1-1_40.ckpt"};
  EXPECT_EQ(*ListFiles(dir.path()), expected);
}

// A rank that dies after the others saved a step, before it is committed, leaves the previous
// step complete, even when only one is kept (found by the chaos test).
TEST(CkptManagerTest, TheNewestCompleteStepIsKeptUntilTheNextIsCommitted) {
  TempDir dir;
  SimulatedRanks run(dir.path(), 2, /*all_ranks=*/true, /*keep=*/1);
  run.SaveStep(1, 10);
  run.SaveStep(1, 20, /*commit=*/false);
  EXPECT_EQ(LatestCompleteStep(dir.path(), kPrefix)->global_step(), 10);
}

// A directory holds one run: a new run refuses one with another run's complete steps, naming
// them; the run itself (a later job that resumed it) goes on. Files without a manifest are no
// complete step and do not count.
TEST(CkptManagerTest, ANewRunRefusesADirectoryWithAnotherRunsCompleteSteps) {
  TempDir dir;
  SimulatedRanks first(dir.path(), 2);
  first.SaveStep(1, 10);
  first.SaveStep(1, 20);
  first.SaveStep(1, 30, /*commit=*/false);
  CheckpointManager other({.directory = dir.path()}, kPrefix, 0, 2, "run-b");
  EXPECT_EQ(other.BeginRun().message(),
            absl::StrCat(dir.path(),
                         " holds complete steps of another run of resnet50 (steps 10, "
                         "20): resume that run from it (lockstep-train --resume ",
                         dir.path(),
                         "), or write this one elsewhere; a new run would overwrite "
                         "its files"));
  CheckpointManager same({.directory = dir.path()}, kPrefix, 1, 2, "run-a");
  EXPECT_TRUE(same.BeginRun().ok());
  CheckpointManager lenet({.directory = dir.path()}, "lenet", 0, 1, "run-b");
  EXPECT_TRUE(lenet.BeginRun().ok());  // another prefix's steps are not its own
  TempDir uncommitted;
  SimulatedRanks partial(uncommitted.path(), 2);
  partial.SaveStep(1, 10, /*commit=*/false);
  CheckpointManager fresh({.directory = uncommitted.path()}, kPrefix, 0, 2, "run-b");
  EXPECT_TRUE(fresh.BeginRun().ok());
}

// Pruning goes by the run's manifests, never by file names: a stray file whose name says a later
// step, another run's steps and an unreadable manifest stay; the run keeps its newest steps.
TEST(CkptManagerTest, PruningRemovesOnlyTheRunsOwnStepsAsTheirManifestsNameThem) {
  TempDir dir;
  SimulatedRanks run(dir.path(), 1, /*all_ranks=*/true, /*keep=*/1);
  // Written after the run began (BeginRun refuses another run's steps found before).
  SimulatedRanks other(dir.path(), 1, /*all_ranks=*/true, /*keep=*/0, "run-b");
  other.SaveStep(1, 5);
  ASSERT_TRUE(WriteFileAtomically(dir.Join("resnet50_0-9_999.ckpt"), "stray").ok());
  ASSERT_TRUE(WriteFileAtomically(dir.Join("resnet50-9_998.manifest"), "{not json").ok());
  for (int64_t step = 1; step <= 3; ++step) run.SaveStep(1, step * 10);
  EXPECT_EQ(*ListFiles(dir.path()),
            (std::vector<std::string>{"resnet50-1_30.manifest", "resnet50-1_5.manifest",
                                      "resnet50-9_998.manifest", "resnet50_0-1_30.ckpt",
                                      "resnet50_0-1_5.ckpt", "resnet50_0-9_999.ckpt"}));
}

// A job that resumed the run (new managers of the same run) prunes the steps its earlier jobs
// saved, oldest first.
TEST(CkptManagerTest, AResumedRunPrunesTheStepsItsEarlierJobsSaved) {
  TempDir dir;
  SimulatedRanks first_job(dir.path(), 2, /*all_ranks=*/true, /*keep=*/2);
  first_job.SaveStep(1, 10);
  first_job.SaveStep(1, 20);
  SimulatedRanks second_job(dir.path(), 2, /*all_ranks=*/true, /*keep=*/2);
  second_job.SaveStep(1, 30);
  EXPECT_EQ(*ListFiles(dir.path()),
            (std::vector<std::string>{"resnet50-1_20.manifest", "resnet50-1_30.manifest",
                                      "resnet50_0-1_20.ckpt", "resnet50_0-1_30.ckpt",
                                      "resnet50_1-1_20.ckpt", "resnet50_1-1_30.ckpt"}));
}

// A job that went on with fewer ranks (an elastic restart) prunes the files of the ranks it no
// longer has, too: rank r those of ranks r + k * world size.
TEST(CkptManagerTest, AResumedRunWithFewerRanksPrunesTheFilesOfTheRanksItLost) {
  TempDir dir;
  SimulatedRanks first_job(dir.path(), 4, /*all_ranks=*/true, /*keep=*/2);
  first_job.SaveStep(1, 10);
  first_job.SaveStep(1, 20);
  SimulatedRanks second_job(dir.path(), 2, /*all_ranks=*/true, /*keep=*/2);
  second_job.SaveStep(1, 30);
  second_job.SaveStep(1, 40);
  EXPECT_EQ(*ListFiles(dir.path()),
            (std::vector<std::string>{"resnet50-1_30.manifest", "resnet50-1_40.manifest",
                                      "resnet50_0-1_30.ckpt", "resnet50_0-1_40.ckpt",
                                      "resnet50_1-1_30.ckpt", "resnet50_1-1_40.ckpt"}));
}

// Hosts that share no file system: rank 0 commits from what the ranks reported, without seeing
// their files, and every directory gets its ranks' files and a copy of the manifest, pruned
// with them. Each rank resumes from its own directory.
TEST(CkptManagerTest, RanksOnTheirOwnDisksEachGetTheManifest) {
  TempDir a, b;
  SimulatedRanks run({a.path(), b.path(), b.path()}, /*all_ranks=*/true, /*keep=*/2);
  for (int64_t step = 1; step <= 3; ++step) run.SaveStep(1, step * 10);
  EXPECT_EQ(*ListFiles(a.path()),
            (std::vector<std::string>{"resnet50-1_20.manifest", "resnet50-1_30.manifest",
                                      "resnet50_0-1_20.ckpt", "resnet50_0-1_30.ckpt"}));
  EXPECT_EQ(*ListFiles(b.path()),
            (std::vector<std::string>{"resnet50-1_20.manifest", "resnet50-1_30.manifest",
                                      "resnet50_1-1_20.ckpt", "resnet50_1-1_30.ckpt",
                                      "resnet50_2-1_20.ckpt", "resnet50_2-1_30.ckpt"}));
  EXPECT_EQ(ReadBytes(a.Join("resnet50-1_30.manifest")),
            ReadBytes(b.Join("resnet50-1_30.manifest")));
  for (int rank = 0; rank < 3; ++rank) {
    RankState state = SimulatedRanks::State(0, 0, 999);
    ASSERT_TRUE(*ResumeNewest(run.managers[rank], &state)) << "rank " << rank;
    EXPECT_EQ(Bytes(state.tensors[0].tensor),
              Bytes(SimulatedRanks::State(1, 30, rank + 30).tensors[0].tensor));
  }
}

// Each rank checks only the file it resumes from; the ranks then agree on a step they all have.
TEST(CkptManagerTest, ARankCanResumeTheStepsWithItsOwnFileAndAManifest) {
  TempDir dir;
  SimulatedRanks run(dir.path(), 2);
  run.SaveStep(1, 10);
  run.SaveStep(1, 20);
  ASSERT_TRUE(RemoveFile(dir.Join("resnet50_1-1_20.ckpt")).ok());
  auto steps = [&](int rank) {
    std::vector<int64_t> global_steps;
    absl::StatusOr<std::vector<proto::Manifest>> resumable = run.managers[rank].ResumableSteps();
    for (const proto::Manifest& step : *resumable) global_steps.push_back(step.global_step());
    return global_steps;
  };
  EXPECT_EQ(steps(0), (std::vector<int64_t>{10, 20}));
  EXPECT_EQ(steps(1), (std::vector<int64_t>{10}));
}

TEST(CkptManagerTest, GraphMetaHoldsTheGraphAndItsFingerprint) {
  TempDir dir;
  lockstep::proto::GraphDef graph;
  lockstep::proto::NodeDef* node = graph.add_nodes();
  node->set_op("Relu");
  (*node->mutable_attrs())["alpha"].set_f(0.5);
  (*node->mutable_attrs())["beta"].set_i(2);
  graph.set_fingerprint(Fingerprint(graph));
  CheckpointManager manager({.directory = dir.path()}, kPrefix, 1, 2);
  ASSERT_TRUE(manager.SaveGraphMeta(graph).ok());
  absl::StatusOr<lockstep::proto::GraphDef> read = ReadGraphMeta(dir.Join("resnet50_1-graph.meta"));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*read, graph));
  EXPECT_TRUE(SummarizeGraph(*read).fingerprint_matches);
}

// A corrupt .meta may hold any integers (found by tests/fuzz/graph_meta_fuzzer): sizes that are
// negative or overflow 64 bits when summed are an error naming the file, not undefined behaviour.
TEST(CkptManagerTest, GraphMetaWithOverflowingSizesIsRefusedNamingTheFile) {
  TempDir dir;
  const std::string path = dir.Join("net_0-graph.meta");
  auto expect_refused = [&](const lockstep::proto::GraphDef& graph, const std::string& what) {
    ASSERT_TRUE(WriteGraphMeta(path, graph).ok());
    absl::StatusOr<lockstep::proto::GraphDef> read = ReadGraphMeta(path);
    ASSERT_FALSE(read.ok()) << what;
    EXPECT_EQ(read.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_NE(read.status().message().find(path + ": not a valid graph: " + what),
              std::string::npos)
        << read.status();
  };
  lockstep::proto::GraphDef dims;
  lockstep::proto::Parameter* w = dims.add_parameters();
  w->set_name("w");
  w->add_dims(int64_t{1} << 40);
  w->add_dims(int64_t{1} << 40);
  expect_refused(dims, "parameter 'w': dims [1099511627776, 1099511627776] are negative");
  w->set_dims(0, -3);
  expect_refused(dims, "parameter 'w': dims [-3, 1099511627776] are negative");

  lockstep::proto::GraphDef bytes;
  bytes.add_parameters()->set_bytes(uint64_t{1} << 63);
  expect_refused(bytes, "the parameters' sizes overflow 64 bits");

  lockstep::proto::GraphDef fusion;
  for (int i = 0; i < 2; ++i) {
    lockstep::proto::NodeDef* node = fusion.add_nodes();
    node->set_op("AllReduce");
    (*node->mutable_attrs())["fusion"].set_i(1);
    (*node->mutable_attrs())["bytes"].set_i(INT64_MAX);
  }
  expect_refused(fusion, "the bytes of AllReduce fusion group 1 overflow 64 bits");
}

// Resume and verify open the files a manifest names inside its directory: a path is refused.
TEST(CkptManagerTest, AManifestNamingAFileOutsideItsDirectoryIsRefused) {
  TempDir dir;
  proto::Manifest manifest;
  manifest.set_version(kManifestVersion);
  manifest.set_prefix("net");
  manifest.set_world_size(1);
  manifest.set_all_ranks(true);
  proto::RankFile* file = manifest.add_files();
  file->set_file("../net_0-1_1.ckpt");
  absl::StatusOr<std::string> path = WriteManifest(dir.path(), manifest);
  ASSERT_TRUE(path.ok()) << path.status();
  absl::StatusOr<proto::Manifest> read = ReadManifest(*path);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find(*path + ": rank 0's file '../net_0-1_1.ckpt' is not a "
                                                 "file name"),
            std::string::npos)
      << read.status();
  EXPECT_EQ(LatestCompleteStep(dir.path(), "net").status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace lockstep::ckpt
