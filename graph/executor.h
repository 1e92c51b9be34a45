#pragma once

// Runs a compiled graph step after step. Memory is allocated once, when the executor is
// created, following the graph's memory plan; a step allocates nothing.

#include <memory>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/backend.h"
#include "core/status.h"
#include "core/tensor.h"
#include "core/whereabouts.h"
#include "graph/graph.h"
#include "graph/kernel.h"

namespace lockstep {

class Executor {
 public:
  // The graph must have been through MemoryPlan and LowerKernels. With `share_with`, the new
  // executor uses that executor's parameter and state buffers (the same memory, not a copy):
  // every parameter and state input must exist there under the same name, type and offset. It
  // also reuses that executor's arena and workspace when they are large enough, so the two must
  // never run at the same time.
  // Memory is allocated on `device`, and kernels get its compute stream.
  static absl::StatusOr<std::unique_ptr<Executor>> Create(std::unique_ptr<Graph> graph,
                                                          Device device = Device::CPU(),
                                                          const Executor* share_with = nullptr);

  // Queues one step. On the CPU it has finished on return; on CUDA it may still run on the
  // device's compute stream: reading results through Tensor::CopyFrom into host memory (or
  // ReadOutput) waits for it. Any thread may run it, and read and write its values: each makes
  // the device current on the calling thread first (Backend::MakeCurrent).
  absl::Status Run();

  // Launches the step as one piece of work from run `warmup_runs` + 1 on (a CUDA graph): that run
  // records the kernels' device work (Backend::BeginCapture) and launches the recording, and
  // later runs launch it again, one launch instead of one per kernel. It holds because kernels do
  // their host work (table uploads, algorithm choices) in the warm-up runs, and the executor's
  // memory stays where it is. Steps with a kernel that is not Kernel::replayable and profiled
  // runs go kernel by kernel; so does every run after a recording that fails, which one line
  // explains.
  void ReplayAfter(int warmup_runs);
  // Whether runs launch a recording.
  bool replaying() const { return recording_ != nullptr; }

  // Per-node time, off by default: while on, each Run adds every kernel's time where it runs
  // (host clock on the CPU, CUDA events on a GPU; a profiled CUDA step waits for the device).
  struct NodeTime {
    const Node* node;
    double seconds;
  };
  void EnableProfiling(bool on);
  // Records the node each step runs in `whereabouts` (its rank's, for the hang report of a
  // multi-rank job); null, the default, records nothing.
  void RecordWhereaboutsIn(std::shared_ptr<Whereabouts> whereabouts) {
    whereabouts_ = std::move(whereabouts);
  }
  // In execution order, summed over the profiled runs.
  std::vector<NodeTime> Profile() const;
  // Seconds the step spent on communication that computation did not hide: waiting for
  // asynchronous kernels, and the whole run of synchronous collectives. Summed over the runs
  // since the last reset; measured whether profiling or not.
  double exposed_wait_seconds() const { return exposed_wait_seconds_; }
  void ResetProfile();

  // Views into the executor's memory (on its device): write inputs, parameters and state before
  // Run, read outputs (results, gradients, updates) after it. Only for values kept in the plain
  // layout (data inputs and results always are); the others are refused with the layout named.
  absl::StatusOr<Tensor> Input(absl::string_view name) const;
  absl::StatusOr<Tensor> Output(absl::string_view name) const;
  // Plain host copies in and out, whatever layout and device the graph keeps the value in:
  // parameters, their gradients and moments may be blocked (convolution weights are on the CPU).
  absl::StatusOr<Tensor> ReadInput(absl::string_view name) const;
  absl::Status WriteInput(absl::string_view name, const Tensor& plain) const;
  absl::StatusOr<Tensor> ReadOutput(absl::string_view name) const;
  // The flat buffers: every parameter (and its gradient) is a view into these.
  const Tensor& parameters() const { return regions_[Index(Region::kParameters)]; }
  const Tensor& gradients() const { return regions_[Index(Region::kGradients)]; }
  const Tensor& state() const { return regions_[Index(Region::kState)]; }
  const Graph& graph() const { return *graph_; }
  Device device() const { return device_; }

  // The step's ordering, for inspection: each node in execution order with the asynchronous
  // nodes (collectives in flight) it waits for before it runs. On CUDA such a wait is a stream
  // waiting on an event, not the host.
  struct StepWaits {
    const Node* node;
    std::vector<const Node*> waits_for;
    bool asynchronous;  // the node's kernel returns before its work is done
  };
  std::vector<StepWaits> WaitPlan() const;

 private:
  static constexpr size_t Index(Region region) { return static_cast<size_t>(region); }
  Executor(std::unique_ptr<Graph> graph, Device device, Backend* backend)
      : graph_(std::move(graph)), device_(device), backend_(backend) {}
  Tensor ViewOf(const Value& value) const;
  absl::StatusOr<const Value*> FindInput(absl::string_view name) const;
  absl::StatusOr<const Value*> FindOutput(absl::string_view name) const;
  // The view of `value`, refused when it is not plain.
  absl::StatusOr<Tensor> PlainView(const Value& value, absl::string_view name) const;
  absl::StatusOr<Tensor> PlainCopy(const Value& value) const;
  absl::Status ShareBuffers(const Executor& other);

  struct Step {
    Node* node;
    std::string label;  // node->Describe(), for the hang report (RecordWhereaboutsIn)
    KernelIO io;
    std::vector<size_t> waits_for;       // asynchronous steps whose outputs this one reads
    bool pending = false;                // asynchronous and not waited for yet
    double seconds = 0.0;                // profiled time
    std::unique_ptr<DeviceTimer> timer;  // while profiling
  };
  absl::Status RunKernels();
  // Launches the recording, with the kernels' host work around it (Kernel::BeforeLaunch,
  // AfterLaunch).
  absl::Status LaunchRecording();
  // Records the step's work (ReplayAfter); an error says why it cannot be.
  absl::Status RecordStep();
  // `recorded` (RecordStep's result), unless another rank could not record its step: then the
  // recording is let go and the step runs kernel by kernel on every rank.
  absl::Status AgreeOnRecording(absl::Status recorded);
  absl::Status AddProfiledTimes();
  absl::Status Wait(Step& step);
  absl::Status WaitAll();
  std::unique_ptr<Graph> graph_;
  Device device_;
  Backend* backend_;             // device_'s
  std::vector<Tensor> regions_;  // indexed by Region
  Tensor workspace_;
  std::vector<Step> steps_;
  bool profiling_ = false;
  std::shared_ptr<Whereabouts> whereabouts_;
  int runs_ = 0;
  int record_at_ = -1;  // the run that records (ReplayAfter); -1: none
  std::unique_ptr<CapturedWork> recording_;
  double exposed_wait_seconds_ = 0.0;
};

}  // namespace lockstep
