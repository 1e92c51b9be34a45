// ModelCheckpoint across ranks (mpirun -n 2 and -n 4): every rank saves its file, rank 0 writes
// the manifest naming them all, the step verifies as lockstep-ckpt verify checks it (every rank's
// file the same model, batch-norm statistics agreed), and a data-parallel run stopped after step k
// and resumed ends bit for bit where an uninterrupted one does, on every rank; also with a
// directory of its own per rank, as on hosts that share no file system. A checkpoint of ranks
// that disagree (saved before the ranks agreed their statistics) resumes with their mean.

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>
#include <cstring>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "ckpt/inspect.h"
#include "ckpt/manifest.h"
#include "ckpt/naming.h"
#include "core/file_io.h"
#include "graph/serialize.h"
#include "parallel/agree.h"
#include "tests/parallel/mpi_test_main.h"
#include "tests/testing/temp_dir.h"
#include "tests/train/resume_util.h"
#include "tests/train/shapes_data.h"
#include "train/checkpoint_callback.h"

namespace lockstep::train {
namespace {

using testing::StopAfter;
using testing::TinyModel;
using testing::VariableBytes;

constexpr int64_t kEpochs = 2;
constexpr char kPrefix[] = "tiny";

// A directory every rank sees: rank 0's TempDir, its path broadcast to the others.
class SharedDir {
 public:
  explicit SharedDir(parallel::Communicator& world) {
    if (world.rank() == 0) owned_.emplace();
    Tensor path = Tensor::Zeros({4096}, DType::kU8);
    if (owned_.has_value())
      std::memcpy(path.raw_data(), owned_->path().data(), owned_->path().size());
    EXPECT_TRUE(world.Broadcast(path, 0).ok());
    path_ = static_cast<const char*>(path.raw_data());
  }
  const std::string& path() const { return path_; }

 private:
  std::optional<lockstep::testing::TempDir> owned_;
  std::string path_;
};

// Every rank's `path`, in rank order.
std::vector<std::string> AllPaths(const std::string& path, parallel::Communicator& world) {
  constexpr int64_t kMaxPath = 4096;
  Tensor mine = Tensor::Zeros({kMaxPath}, DType::kU8);
  std::memcpy(mine.raw_data(), path.data(), path.size());
  Tensor all = Tensor::Zeros({world.size(), kMaxPath}, DType::kU8);
  EXPECT_TRUE(world.AllGather(mine, all).ok());
  std::vector<std::string> paths;
  for (int rank = 0; rank < world.size(); ++rank) {
    paths.emplace_back(static_cast<const char*>(all.raw_data()) + rank * kMaxPath);
  }
  return paths;
}

Model DataParallelModel(uint64_t seed) {
  return TinyModel({.seed = seed,
                    .parallel = {.mode = parallel::ParallelMode::kDataParallel},
                    .context = TestContext()});
}

// This rank's shard: 40 samples of its own (10 steps per epoch), shuffled every epoch.
std::unique_ptr<DataSource> RankData(int rank) {
  testing::ShapeImages shapes = testing::MakeShapeImages(40, 3, 16, 20 + rank);
  auto source = InMemoryDataSource::Create(
      shapes.images, shapes.labels,
      {.batch_size = 4, .shuffle = true, .drop_remainder = true, .seed = 9});
  EXPECT_TRUE(source.ok()) << source.status();
  return std::move(*source);
}

ckpt::CheckpointConfig EveryThirdStep(const std::string& directory) {
  return {.save_checkpoint_steps = 3, .keep_checkpoint_max = 2, .directory = directory};
}

// DataParallelModel(1) checkpointing every 3 steps (2 kept) into `directory`, stopped after step
// 14 as a killed job would stop.
void TrainStoppedAfterStep14(const std::string& directory, int rank) {
  Model stopped = DataParallelModel(1);
  absl::Status status =
      stopped.Train(kEpochs, *RankData(rank),
                    {std::make_shared<ModelCheckpoint>(EveryThirdStep(directory), kPrefix),
                     std::make_shared<StopAfter>(14)});
  ASSERT_TRUE(absl::IsCancelled(status)) << status;
}

// DataParallelModel(1) trained uninterrupted, saving as TrainStoppedAfterStep14 does (each save
// agrees the running statistics), into a directory of each rank's own.
Model UninterruptedReference(int rank) {
  lockstep::testing::TempDir dir;
  Model reference = DataParallelModel(1);
  absl::Status trained =
      reference.Train(kEpochs, *RankData(rank),
                      {std::make_shared<ModelCheckpoint>(EveryThirdStep(dir.path()), kPrefix)});
  EXPECT_TRUE(trained.ok()) << trained;
  return reference;
}

// Trains `resumed` to the end, saving as UninterruptedReference does, into a directory of each
// rank's own.
void TrainToTheEnd(Model& resumed, int rank) {
  lockstep::testing::TempDir dir;
  absl::Status trained =
      resumed.Train(kEpochs - resumed.epochs_done(), *RankData(rank),
                    {std::make_shared<ModelCheckpoint>(EveryThirdStep(dir.path()), kPrefix)});
  EXPECT_TRUE(trained.ok()) << trained;
}

// The bytes of every rank's variable `name`, in rank order.
std::vector<std::string> EveryRanksBytes(const Model& model, const std::string& name,
                                         parallel::Communicator& world) {
  absl::StatusOr<Tensor> mine = model.Variable(name);
  EXPECT_TRUE(mine.ok()) << mine.status();
  Shape shape = {world.size()};
  shape.insert(shape.end(), mine->shape().begin(), mine->shape().end());
  Tensor all = Tensor::Empty(shape, mine->dtype());
  EXPECT_TRUE(world.AllGather(*mine, all).ok());
  std::vector<std::string> bytes;
  for (int rank = 0; rank < world.size(); ++rank) {
    bytes.emplace_back(static_cast<const char*>(all.raw_data()) + rank * mine->nbytes(),
                       mine->nbytes());
  }
  return bytes;
}

TEST(CheckpointMpiTest, DataParallelRunResumesBitForBitOnEveryRank) {
  const parallel::Context& ctx = TestContext();
  std::shared_ptr<parallel::Communicator> world = ctx.HostWorld();
  Model reference = UninterruptedReference(ctx.rank());

  SharedDir dir(*world);
  TrainStoppedAfterStep14(dir.path(), ctx.rank());
  absl::StatusOr<ckpt::proto::Manifest> manifest = ckpt::LatestCompleteStep(dir.path(), kPrefix);
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  EXPECT_EQ(manifest->global_step(), 12);
  EXPECT_EQ(manifest->world_size(), ctx.size());
  EXPECT_EQ(manifest->files_size(), ctx.size());
  EXPECT_TRUE(manifest->rank_local().empty());  // every rank's file holds the same tensors
  ckpt::VerifyReport report = ckpt::VerifyStep(dir.path(), *manifest);
  EXPECT_TRUE(report.problems.empty()) << absl::StrJoin(report.problems, "; ");

  Model resumed = DataParallelModel(2);
  ASSERT_TRUE(ResumeFromCheckpoint(resumed, dir.path(), kPrefix).value_or(false));
  EXPECT_EQ(resumed.global_step(), 12);
  TrainToTheEnd(resumed, ctx.rank());
  EXPECT_EQ(resumed.global_step(), 20);
  EXPECT_TRUE(VariableBytes(resumed) == VariableBytes(reference));
  ASSERT_TRUE(world->Barrier().ok());  // rank 0 removes the directory last
}

// Each rank checkpoints into a directory of its own, as onto its host's disk: each directory
// holds its rank's files and a copy of every manifest, and verifies with the others. A rank that
// lacks the newest manifest (its host stopped before copying it) makes every rank resume the
// step before, bit for bit; with no step in common, resume fails alike on every rank.
TEST(CheckpointMpiTest, RanksWithoutASharedDirectoryResumeTheNewestStepAllHave) {
  const parallel::Context& ctx = TestContext();
  std::shared_ptr<parallel::Communicator> world = ctx.HostWorld();
  Model reference = UninterruptedReference(ctx.rank());

  lockstep::testing::TempDir dir;
  TrainStoppedAfterStep14(dir.path(), ctx.rank());
  const std::string rank = absl::StrCat(ctx.rank());
  EXPECT_EQ(
      *ListFiles(dir.path()),
      (std::vector<std::string>{
          "tiny-1_9.manifest", "tiny-2_2.manifest", absl::StrCat("tiny_", rank, "-1_9.ckpt"),
          absl::StrCat("tiny_", rank, "-2_2.ckpt"), absl::StrCat("tiny_", rank, "-graph.meta")}));
  const std::vector<std::string> dirs = AllPaths(dir.path(), *world);
  absl::StatusOr<ckpt::proto::Manifest> manifest = ckpt::FindManifest(dirs, kPrefix, std::nullopt);
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  EXPECT_EQ(manifest->global_step(), 12);
  ckpt::VerifyReport report = ckpt::VerifyStep(dirs, *manifest);
  EXPECT_TRUE(report.problems.empty()) << absl::StrJoin(report.problems, "; ");
  ASSERT_TRUE(world->Barrier().ok());  // verified before the last rank removes a manifest

  if (ctx.rank() == ctx.size() - 1) {
    ASSERT_TRUE(RemoveFile(dir.Join("tiny-2_2.manifest")).ok());
  }
  Model resumed = DataParallelModel(2);
  ASSERT_TRUE(ResumeFromCheckpoint(resumed, dir.path(), kPrefix).value_or(false));
  EXPECT_EQ(resumed.global_step(), 9);
  TrainToTheEnd(resumed, ctx.rank());
  EXPECT_TRUE(VariableBytes(resumed) == VariableBytes(reference));

  if (ctx.rank() == ctx.size() - 1) {
    ASSERT_TRUE(RemoveFile(dir.Join("tiny-1_9.manifest")).ok());
  }
  Model none_in_common = DataParallelModel(3);
  absl::StatusOr<bool> found = ResumeFromCheckpoint(none_in_common, dir.path(), kPrefix);
  EXPECT_TRUE(parallel::IsAgreedError(found.status())) << found.status();
  EXPECT_TRUE(
      absl::StartsWith(found.status().message(), "no checkpoint step is complete on every rank: "))
      << found.status();
  EXPECT_NE(found.status().message().find(
                absl::StrCat("rank ", ctx.size() - 1, ": no complete step in ")),
            std::string::npos)
      << found.status();
}

// Limits this process's files to a few bytes over global steps [from, to), as a full disk or a
// quota would: writes then fail with EFBIG (SIGXFSZ, which would kill the process, is ignored).
class FullDiskDuring : public Callback {
 public:
  FullDiskDuring(int64_t from, int64_t to) : from_(from), to_(to) {
    std::signal(SIGXFSZ, SIG_IGN);
    getrlimit(RLIMIT_FSIZE, &normal_);
  }
  ~FullDiskDuring() override { setrlimit(RLIMIT_FSIZE, &normal_); }
  absl::Status OnStepEnd(Model&, const StepInfo& step) override {
    rlimit limit = normal_;
    if (step.global_step == from_) limit.rlim_cur = 64;
    if (step.global_step == from_ || step.global_step == to_) setrlimit(RLIMIT_FSIZE, &limit);
    return absl::OkStatus();
  }

 private:
  int64_t from_, to_;
  rlimit normal_;
};

// The last rank cannot write its file of step 6: every rank stops with one error naming that
// rank, its file and the reason, and step 3 stays the newest complete step; with kContinue the
// ranks warn, train on, and save the later steps.
TEST(CheckpointMpiTest, AFailedSaveOnOneRankIsToldToAllAndLosesNothing) {
  const parallel::Context& ctx = TestContext();
  const int last = ctx.size() - 1;
  SharedDir dir(*ctx.HostWorld());
  const ckpt::CheckpointConfig config{
      .save_checkpoint_steps = 3, .keep_checkpoint_max = 0, .directory = dir.path()};
  auto train = [&](SaveErrorPolicy policy) {
    Callbacks callbacks;
    if (ctx.rank() == last) callbacks.push_back(std::make_shared<FullDiskDuring>(5, 7));
    callbacks.push_back(std::make_shared<ModelCheckpoint>(config, kPrefix, nullptr, policy));
    Model model = DataParallelModel(1);
    return model.Train(kEpochs, *RankData(ctx.rank()), callbacks);
  };

  absl::Status stopped = train(SaveErrorPolicy::kStop);
  EXPECT_TRUE(parallel::IsAgreedError(stopped)) << stopped;
  const std::regex named(absl::StrCat("checkpoint step 6 not saved: rank ", last,
                                      ": writing .*/tiny_", last, "-1_6\\.ckpt.*: File too large"));
  EXPECT_TRUE(std::regex_match(std::string(stopped.message()), named)) << stopped;
  EXPECT_EQ(ckpt::LatestCompleteStep(dir.path(), kPrefix)->global_step(), 3);

  ASSERT_TRUE(train(SaveErrorPolicy::kContinue).ok());
  absl::StatusOr<std::vector<ckpt::proto::Manifest>> manifests =
      ckpt::ListManifests(dir.path(), kPrefix);
  ASSERT_TRUE(manifests.ok()) << manifests.status();
  std::vector<int64_t> steps;
  for (const ckpt::proto::Manifest& manifest : *manifests) steps.push_back(manifest.global_step());
  EXPECT_EQ(steps, (std::vector<int64_t>{3, 9, 12, 15, 18}));
  ASSERT_TRUE(ctx.HostWorld()->Barrier().ok());  // rank 0 removes the directory last
}

// Each rank trains on its own shard, so its running statistics are its own; an evaluation makes
// them one model's on every rank, and evaluates that model.
TEST(CheckpointMpiTest, EvaluationAgreesTheRunningStatisticsFirst) {
  const parallel::Context& ctx = TestContext();
  parallel::Communicator& world = *ctx.HostWorld();
  Model model = DataParallelModel(1);
  ASSERT_TRUE(model.Train(1, *RankData(ctx.rank())).ok());
  std::vector<std::string> before = EveryRanksBytes(model, "bn.moving_mean", world);
  EXPECT_NE(before[0], before[1]);  // the shards differ

  absl::StatusOr<EvalResult> result = model.Eval(*RankData(ctx.rank()));
  ASSERT_TRUE(result.ok()) << result.status();
  for (const char* name : {"bn.moving_mean", "bn.moving_variance"}) {
    const std::vector<std::string> after = EveryRanksBytes(model, name, world);
    for (int rank = 1; rank < ctx.size(); ++rank) EXPECT_EQ(after[rank], after[0]) << name;
  }
  EXPECT_FALSE(model.AgreeRunningStatistics().value_or(true));  // agreed already
}

// With SyncBatchNorm every rank computes the same statistics from the global batch: they agree
// without an agreement, which then changes nothing.
TEST(CheckpointMpiTest, SyncBatchNormStatisticsAgreeByThemselves) {
  const parallel::Context& ctx = TestContext();
  Model model = TinyModel(
      {.seed = 1,
       .parallel = {.mode = parallel::ParallelMode::kDataParallel, .sync_batch_norm = true},
       .context = ctx});
  ASSERT_TRUE(model.Train(1, *RankData(ctx.rank())).ok());
  const std::vector<std::string> bytes = EveryRanksBytes(model, "bn.moving_mean", *ctx.HostWorld());
  for (int rank = 1; rank < ctx.size(); ++rank) EXPECT_EQ(bytes[rank], bytes[0]);
  EXPECT_FALSE(model.AgreeRunningStatistics().value_or(true));
}

// Writes `model`'s variables as step 10 (epoch 1 done) of kPrefix in `directory`, as Lockstep
// saved before the ranks agreed their running statistics: each rank its own, the manifest naming
// them rank-local.
void SaveUnagreedStep(const Model& model, const std::string& directory,
                      parallel::Communicator& world) {
  const ckpt::CheckpointManager manager({.directory = directory}, kPrefix, world.rank(),
                                        world.size());
  const Graph& graph = model.train_executor()->graph();
  ASSERT_TRUE(manager.SaveGraphMeta(ToProto(graph)).ok());
  ckpt::RankState state{.epoch = 1, .global_step = 10, .step_in_epoch = 10};
  for (InputRole role : {InputRole::kParameter, InputRole::kState}) {
    for (const Node* input : graph.InputNodes(role)) {
      state.tensors.push_back({input->name, *model.Variable(input->name)});
    }
  }
  state.scalars = {{kDataEpochName, 1}, {kDataBatchName, 0}};
  absl::StatusOr<ckpt::WrittenFile> written = manager.Save(state);
  ASSERT_TRUE(written.ok()) << written.status();
  Tensor record = Tensor::Empty({2}, DType::kI64);
  record.data<int64_t>()[0] = static_cast<int64_t>(written->bytes);
  record.data<int64_t>()[1] = written->crc32;
  Tensor records = Tensor::Empty({world.size(), 2}, DType::kI64);
  ASSERT_TRUE(world.AllGather(record, records).ok());
  if (world.rank() == 0) {
    std::vector<ckpt::WrittenFile> files;
    for (int rank = 0; rank < world.size(); ++rank) {
      files.push_back({ckpt::CheckpointFileName(kPrefix, rank, 1, 10),
                       static_cast<uint64_t>(records.data<int64_t>()[2 * rank]),
                       static_cast<uint32_t>(records.data<int64_t>()[2 * rank + 1])});
    }
    ASSERT_TRUE(
        manager.Commit(state, files, Fingerprint(graph), {"bn.moving_mean", "bn.moving_variance"})
            .ok());
  }
  ASSERT_TRUE(world.Barrier().ok());
}

TEST(CheckpointMpiTest, ACheckpointOfDisagreeingRanksResumesWithTheirMean) {
  const parallel::Context& ctx = TestContext();
  parallel::Communicator& world = *ctx.HostWorld();
  Model trained = DataParallelModel(1);
  ASSERT_TRUE(trained.Train(1, *RankData(ctx.rank())).ok());
  SharedDir dir(world);
  SaveUnagreedStep(trained, dir.path(), world);

  Model resumed = DataParallelModel(2);
  ASSERT_TRUE(ResumeFromCheckpoint(resumed, dir.path(), kPrefix).value_or(false));
  ASSERT_TRUE(trained.AgreeRunningStatistics().value_or(false));  // the mean, as resume takes it
  for (const char* name : {"bn.moving_mean", "bn.moving_variance"}) {
    const std::vector<std::string> agreed = EveryRanksBytes(resumed, name, world);
    EXPECT_EQ(agreed[ctx.rank()], EveryRanksBytes(trained, name, world)[ctx.rank()]) << name;
    for (int rank = 1; rank < ctx.size(); ++rank) EXPECT_EQ(agreed[rank], agreed[0]) << name;
  }
  ASSERT_TRUE(resumed.Train(kEpochs - resumed.epochs_done(), *RankData(ctx.rank())).ok());
  ASSERT_TRUE(world.Barrier().ok());  // rank 0 removes the directory last
}

}  // namespace
}  // namespace lockstep::train
