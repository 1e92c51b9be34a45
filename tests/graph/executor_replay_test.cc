// Steps recorded once and launched again as a whole (Executor::ReplayAfter), on a backend of the
// test's own whose "device work" is a list of strings: a kernel queues its node's name, a
// recording collects what is queued instead of running it, and a launch appends the recording.
// So the test sees what the device runs, what the kernels do on the host, and the order of the
// launch hooks, as a GPU's CUDA graphs would have them.

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/host_backend.h"
#include "graph/builder.h"
#include "graph/compile.h"
#include "graph/kernel.h"
#include "graph/op_registry.h"

namespace lockstep {
namespace {

constexpr DeviceType kRecordingDevice =
    static_cast<DeviceType>(static_cast<int>(DeviceType::kFirstOther) + 9);

struct Recording : CapturedWork {
  Recording() { ++alive; }
  ~Recording() override { --alive; }
  std::vector<std::string> work;
  static inline int alive = 0;  // recordings not yet destroyed
};

// Host memory and copies; its one stream is `ran`.
class RecordingBackend : public HostBackend {
 public:
  std::string name() const override { return "recording"; }
  absl::Status BeginCapture(int) override {
    recording_ = std::make_unique<Recording>();
    return absl::OkStatus();
  }
  absl::StatusOr<std::unique_ptr<CapturedWork>> EndCapture(int) override {
    return std::unique_ptr<CapturedWork>(std::move(recording_));
  }
  absl::Status Launch(CapturedWork& work, int) override {
    const auto& recorded = static_cast<Recording&>(work).work;
    ran.insert(ran.end(), recorded.begin(), recorded.end());
    return absl::OkStatus();
  }
  // Queues `what` on the stream: recorded while a recording is on, else run.
  void Queue(const std::string& what) { (recording_ ? recording_->work : ran).push_back(what); }
  void Reset() {
    ran.clear();
    host.clear();
    refusing.clear();
    recording_ = nullptr;
  }

  std::vector<std::string> ran;   // the device work done, in order
  std::vector<std::string> host;  // the kernels' host work and launch hooks, in order
  std::string refusing;           // the label of a kernel whose BeforeLaunch fails

 private:
  std::unique_ptr<Recording> recording_;
};

RecordingBackend& Recorder() {
  static auto* backend = [] {
    auto owned = std::make_unique<RecordingBackend>();
    RecordingBackend* raw = owned.get();
    RegisterBackend(kRecordingDevice, std::move(owned));
    return raw;
  }();
  return *backend;
}

REGISTER_OP("ReplayMark")
    .Inputs(1)
    .Attr("label", std::string())
    .Attr("replayable", true)
    .Attr("collective", false)
    .Attr("peers_recorded", true)
    .Infer([](const InferContext& ctx) {
      return absl::StatusOr<std::vector<TensorType>>(std::vector<TensorType>{ctx.inputs[0]});
    });

// Copies its input and queues its label; notes its host runs and launch hooks. As a collective
// it answers for its peers whether they recorded their step.
class MarkKernel : public Kernel {
 public:
  explicit MarkKernel(const Node& node)
      : name_(node.attrs.GetString("label")),
        replayable_(node.attrs.GetBool("replayable")),
        collective_(node.attrs.GetBool("collective")),
        peers_recorded_(node.attrs.GetBool("peers_recorded")) {}
  absl::Status Run(const KernelIO& io) override {
    std::memcpy(io.outputs[0].raw_data(), io.inputs[0].raw_data(), io.inputs[0].nbytes());
    Recorder().host.push_back("run " + name_);
    Recorder().Queue(name_);
    return absl::OkStatus();
  }
  bool replayable() const override { return replayable_; }
  bool communicates() const override { return collective_; }
  absl::StatusOr<bool> HoldsOnEveryRank(bool mine) override {
    Recorder().host.push_back("agree " + name_);
    return mine && peers_recorded_;
  }
  absl::Status BeforeLaunch() override {
    if (Recorder().refusing == name_) {
      return absl::FailedPreconditionError("the communicator was aborted");
    }
    Recorder().host.push_back("before " + name_);
    return absl::OkStatus();
  }
  absl::Status AfterLaunch() override {
    Recorder().host.push_back("after " + name_);
    return absl::OkStatus();
  }

 private:
  std::string name_;
  bool replayable_;
  bool collective_;
  bool peers_recorded_;
};

REGISTER_KERNEL({.op = "ReplayMark",
                 .device = kRecordingDevice,
                 .create = MakeFactory<MarkKernel>()});

// x -> a -> b -> "y" on the recording device (nodes and labels "a" and "b"); `b_attrs` set b's
// other attributes.
std::unique_ptr<Executor> CompileMarks(const Attrs& b_attrs = {}) {
  Recorder().Reset();
  auto graph = std::make_unique<Graph>();
  Builder b(graph.get());
  Value* x = b.Input("x", {4});
  b.SetNamePrefix("a/");
  Value* a = b.Op1("ReplayMark", {x}, {{"label", std::string("a")}});
  b.SetNamePrefix("b/");
  Attrs attrs = b_attrs;
  attrs.Set("label", std::string("b"));
  Value* y = b.Op1("ReplayMark", {a}, attrs);
  graph->AddOutput("y", y, OutputKind::kResult);
  EXPECT_TRUE(b.status().ok()) << b.status();
  absl::StatusOr<std::unique_ptr<Executor>> executor =
      Compile(std::move(graph), {.device = {kRecordingDevice, 0}});
  EXPECT_TRUE(executor.ok()) << executor.status();
  return executor.ok() ? *std::move(executor) : nullptr;
}

std::vector<std::string> Repeat(const std::vector<std::string>& items, int times) {
  std::vector<std::string> out;
  for (int i = 0; i < times; ++i) out.insert(out.end(), items.begin(), items.end());
  return out;
}

// Runs the step four times, the second meant to be recorded; what it printed.
std::string FourRunsRecordingTheSecond(Executor& executor) {
  executor.ReplayAfter(1);
  ::testing::internal::CaptureStdout();
  for (int run = 0; run < 4; ++run) EXPECT_TRUE(executor.Run().ok());
  return ::testing::internal::GetCapturedStdout();
}

TEST(ExecutorReplayTest, AfterTheWarmUpTheStepIsRecordedOnceAndLaunchedWhole) {
  std::unique_ptr<Executor> executor = CompileMarks();
  ASSERT_NE(executor, nullptr);
  executor->ReplayAfter(2);
  for (int run = 0; run < 5; ++run) ASSERT_TRUE(executor->Run().ok());
  EXPECT_TRUE(executor->replaying());
  // The device did what five runs kernel by kernel do.
  EXPECT_EQ(Recorder().ran, Repeat({"a", "b"}, 5));
  // The kernels' host work ran in the two warm-up runs and the recording run only; every launch
  // (runs 3 to 5) has its hooks around it.
  std::vector<std::string> host = Repeat({"run a", "run b"}, 3);
  const auto launch = Repeat({"before a", "before b", "after a", "after b"}, 3);
  host.insert(host.end(), launch.begin(), launch.end());
  EXPECT_EQ(Recorder().host, host);
}

TEST(ExecutorReplayTest, AProfiledRunGoesKernelByKernelAndReplayResumesAfter) {
  std::unique_ptr<Executor> executor = CompileMarks();
  ASSERT_NE(executor, nullptr);
  executor->ReplayAfter(0);
  ASSERT_TRUE(executor->Run().ok());  // recorded and launched
  executor->EnableProfiling(true);
  ASSERT_TRUE(executor->Run().ok());
  executor->EnableProfiling(false);
  ASSERT_TRUE(executor->Run().ok());
  EXPECT_EQ(Recorder().ran, Repeat({"a", "b"}, 3));
  EXPECT_EQ(Recorder().host, (std::vector<std::string>{
                                 "run a", "run b", "before a", "before b", "after a", "after b",
                                 "run a", "run b", "before a", "before b", "after a", "after b"}));
}

TEST(ExecutorReplayTest, AKernelThatCannotBeReplayedKeepsTheStepKernelByKernelAndSaysWhich) {
  std::unique_ptr<Executor> executor = CompileMarks({{"replayable", false}});
  ASSERT_NE(executor, nullptr);
  const std::string out = FourRunsRecordingTheSecond(*executor);
  EXPECT_FALSE(executor->replaying());
  EXPECT_EQ(Recorder().ran, Repeat({"a", "b"}, 4));
  EXPECT_EQ(Recorder().host, Repeat({"run a", "run b"}, 4));
  EXPECT_NE(out.find("steps run kernel by kernel: the step is not recorded for replay: "
                     "ReplayMark node 'b/"),
            std::string::npos)
      << out;
}

TEST(ExecutorReplayTest, AStepThatCannotBeLaunchedFailsNamingTheNodeAndLetsItsRecordingGo) {
  // NCCL's abort waits for every CUDA graph holding its collectives to be destroyed.
  std::unique_ptr<Executor> executor = CompileMarks();
  ASSERT_NE(executor, nullptr);
  executor->ReplayAfter(0);
  ASSERT_TRUE(executor->Run().ok());
  ASSERT_TRUE(executor->replaying());
  EXPECT_EQ(Recording::alive, 1);
  Recorder().refusing = "b";
  const absl::Status status = executor->Run();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("ReplayMark node 'b/"), std::string::npos) << status;
  EXPECT_NE(status.message().find("the communicator was aborted"), std::string::npos) << status;
  EXPECT_FALSE(executor->replaying());
  EXPECT_EQ(Recording::alive, 0);
  EXPECT_EQ(Recorder().ran, Repeat({"a", "b"}, 1));  // nothing launched
}

TEST(ExecutorReplayTest, WhereAnotherRankCouldNotRecordItsStepNoRankReplays) {
  // NCCL wants every rank to run a collective alike: from CUDA graphs on all or on none.
  std::unique_ptr<Executor> executor =
      CompileMarks({{"collective", true}, {"peers_recorded", false}});
  ASSERT_NE(executor, nullptr);
  const std::string out = FourRunsRecordingTheSecond(*executor);
  EXPECT_FALSE(executor->replaying());
  EXPECT_EQ(Recording::alive, 0);
  EXPECT_EQ(Recorder().ran, Repeat({"a", "b"}, 4));
  // Asked once, after the recording run's kernels; that run then goes kernel by kernel.
  std::vector<std::string> host = Repeat({"run a", "run b"}, 2);
  host.push_back("agree b");
  const auto rest = Repeat({"run a", "run b"}, 3);
  host.insert(host.end(), rest.begin(), rest.end());
  EXPECT_EQ(Recorder().host, host);
  EXPECT_NE(out.find("steps run kernel by kernel: another rank could not record its step"),
            std::string::npos)
      << out;
}

TEST(ExecutorReplayTest, WhereEveryRankRecordedItsStepTheyReplay) {
  std::unique_ptr<Executor> executor = CompileMarks({{"collective", true}});
  ASSERT_NE(executor, nullptr);
  executor->ReplayAfter(0);
  for (int run = 0; run < 2; ++run) ASSERT_TRUE(executor->Run().ok());
  EXPECT_TRUE(executor->replaying());
  EXPECT_EQ(Recorder().ran, Repeat({"a", "b"}, 2));
  EXPECT_EQ(Recorder().host, (std::vector<std::string>{"run a", "run b", "agree b", "before a",
                                                       "before b", "after a", "after b", "before a",
                                                       "before b", "after a", "after b"}));
}

}  // namespace
}  // namespace lockstep
