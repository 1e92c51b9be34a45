#include "graph/executor.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>

#include "core/backend.h"

namespace lockstep {

absl::StatusOr<std::unique_ptr<Executor>> Executor::Create(std::unique_ptr<Graph> graph,
                                                           Device device,
                                                           const Executor* share_with) {
  if (share_with != nullptr && share_with->device_ != device) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot share buffers of ", share_with->device_.ToString(), " on ", device.ToString()));
  }
  LS_ASSIGN_OR_RETURN(Backend * backend, FindBackend(device.type));
  LS_RETURN_IF_ERROR(backend->MakeCurrent(device.index));
  std::unique_ptr<Executor> executor(new Executor(std::move(graph), device, backend));
  const MemoryPlanSizes& sizes = executor->graph_->plan();
  if (sizes.alignment % backend->alignment() != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the memory plan aligns to ", sizes.alignment, " bytes, ", device.ToString(), " needs ",
        backend->alignment(), ": plan the graph for the device it runs on"));
  }
  executor->regions_.resize(Index(Region::kState) + 1);
  auto allocate = [&](Region region, size_t bytes) -> absl::Status {
    absl::StatusOr<Tensor> memory =
        Tensor::Allocate({static_cast<int64_t>(bytes)}, DType::kU8, device, /*zeroed=*/true);
    if (!memory.ok()) return Annotate(memory.status(), RegionName(region));
    executor->regions_[Index(region)] = *std::move(memory);
    return absl::OkStatus();
  };
  LS_RETURN_IF_ERROR(allocate(Region::kInputs, sizes.inputs));
  LS_RETURN_IF_ERROR(allocate(Region::kGradients, sizes.gradients));
  if (share_with != nullptr) {
    LS_RETURN_IF_ERROR(executor->ShareBuffers(*share_with));
  } else {
    LS_RETURN_IF_ERROR(allocate(Region::kParameters, sizes.parameters));
    LS_RETURN_IF_ERROR(allocate(Region::kState, sizes.state));
  }
  // Scratch whose contents do not outlive a step can be shared too: the executors never run
  // at the same time.
  const Tensor* other_arena = share_with ? &share_with->regions_[Index(Region::kArena)] : nullptr;
  if (other_arena != nullptr && other_arena->nbytes() >= sizes.arena) {
    executor->regions_[Index(Region::kArena)] = *other_arena;
  } else {
    LS_RETURN_IF_ERROR(allocate(Region::kArena, sizes.arena));
  }
  if (share_with != nullptr && share_with->workspace_.nbytes() >= sizes.workspace) {
    executor->workspace_ = share_with->workspace_;
  } else {
    LS_ASSIGN_OR_RETURN(executor->workspace_,
                        Tensor::Allocate({static_cast<int64_t>(sizes.workspace)}, DType::kU8,
                                         device, /*zeroed=*/false));
  }

  LS_ASSIGN_OR_RETURN(void* stream, backend->ComputeStream(device.index));
  std::map<const Node*, size_t> async_steps;  // producer -> index in steps_
  for (const auto& node : executor->graph_->nodes()) {
    if (node->IsInput()) continue;
    if (node->kernel == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat(node->Describe(), " has no kernel: run LowerKernels before Executor"));
    }
    Step step{node.get(), node->Describe(), {}};
    for (const Value* input : node->inputs) {
      step.io.inputs.push_back(executor->ViewOf(*input));
      auto async = async_steps.find(input->producer);
      // Once per producer: a node may read several outputs of one collective (a bucket's update).
      if (async != async_steps.end() && std::find(step.waits_for.begin(), step.waits_for.end(),
                                                  async->second) == step.waits_for.end()) {
        step.waits_for.push_back(async->second);
      }
    }
    for (const auto& output : node->outputs) step.io.outputs.push_back(executor->ViewOf(*output));
    step.io.workspace = executor->workspace_.raw_data();
    step.io.stream = stream;
    if (node->kernel->asynchronous()) async_steps[node.get()] = executor->steps_.size();
    executor->steps_.push_back(std::move(step));
  }
  return executor;
}

// Parameters and state are placed in graph order, so a graph built from the same layers in the
// same order puts them at the same offsets; anything else is refused by name.
absl::Status Executor::ShareBuffers(const Executor& other) {
  for (InputRole role : {InputRole::kParameter, InputRole::kState}) {
    for (const Node* node : graph_->InputNodes(role)) {
      const Node* theirs = other.graph_->FindInput(node->name);
      const Value& mine = *node->output();
      auto describe = [](const Value& value) {
        return absl::StrCat(TypeToString(value.type), " ", LayoutName(value.layout), " at offset ",
                            value.alloc.offset);
      };
      if (theirs == nullptr || theirs->role() != role || theirs->output()->type != mine.type ||
          theirs->output()->layout != mine.layout ||
          theirs->output()->alloc.offset != mine.alloc.offset) {
        std::string found = theirs == nullptr ? "no such input"
                                              : absl::StrCat(InputRoleName(theirs->role()), " ",
                                                             describe(*theirs->output()));
        return absl::InvalidArgumentError(
            absl::StrCat("cannot share buffers: ", InputRoleName(role), " '", node->name, "' is ",
                         describe(mine), ", the other graph has ", found));
      }
    }
  }
  for (Region region : {Region::kParameters, Region::kState}) {
    const Tensor& buffer = other.regions_[Index(region)];
    const MemoryPlanSizes& sizes = graph_->plan();
    const size_t needed = region == Region::kParameters ? sizes.parameters : sizes.state;
    if (needed > buffer.nbytes()) {
      return absl::InvalidArgumentError(absl::StrCat("cannot share buffers: ", RegionName(region),
                                                     " needs ", needed, " bytes, the other has ",
                                                     buffer.nbytes()));
    }
    regions_[Index(region)] = buffer;
  }
  return absl::OkStatus();
}

Tensor Executor::ViewOf(const Value& value) const {
  LS_CHECK(value.alloc.region != Region::kNone) << value.Label() << " was not planned";
  return regions_[Index(value.alloc.region)].View(value.alloc.offset, value.shape(), value.dtype());
}

// Kernels launch on, and use the library handles of, the calling thread's current device: a
// step may run on another thread than the last one (or than the one that built the executor).
absl::Status Executor::Run() {
  LS_RETURN_IF_ERROR(backend_->MakeCurrent(device_.index));
  if (profiling_) return RunKernels();
  if (recording_ != nullptr) return LaunchRecording();
  if (runs_++ == record_at_) {
    absl::Status recorded = AgreeOnRecording(RecordStep());
    if (recorded.ok()) return LaunchRecording();
    LS_LOG(Info) << "steps run kernel by kernel: " << recorded.message();
  }
  return RunKernels();
}

absl::Status Executor::LaunchRecording() {
  for (Step& step : steps_) {
    absl::Status ready = step.node->kernel->BeforeLaunch();
    if (!ready.ok()) {
      // The step cannot run again (an aborted communicator, say), and the recording may be what
      // keeps a failing communicator from ending: NCCL's abort waits for every CUDA graph that
      // holds one of its collectives.
      recording_.reset();
      return Annotate(ready, step.node->Describe());
    }
  }
  LS_RETURN_IF_ERROR(backend_->Launch(*recording_, device_.index));
  for (Step& step : steps_) {
    LS_RETURN_IF_ERROR(Annotate(step.node->kernel->AfterLaunch(), step.node->Describe()));
  }
  return absl::OkStatus();
}

void Executor::ReplayAfter(int warmup_runs) { record_at_ = warmup_runs; }

absl::Status Executor::RecordStep() {
  for (const Step& step : steps_) {
    if (!step.node->kernel->replayable()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the step is not recorded for replay: ", step.node->Describe(), " cannot be replayed"));
    }
  }
  LS_RETURN_IF_ERROR(backend_->BeginCapture(device_.index));
  const absl::Status ran = RunKernels();
  absl::StatusOr<std::unique_ptr<CapturedWork>> recording = backend_->EndCapture(device_.index);
  LS_RETURN_IF_ERROR(ran);
  LS_RETURN_IF_ERROR(recording.status());
  recording_ = *std::move(recording);
  return absl::OkStatus();
}

absl::Status Executor::AgreeOnRecording(absl::Status recorded) {
  for (Step& step : steps_) {
    if (!step.node->kernel->communicates()) continue;
    absl::StatusOr<bool> everyone = step.node->kernel->HoldsOnEveryRank(recorded.ok());
    if (everyone.ok() && *everyone) return recorded;
    recording_.reset();
    if (!everyone.ok()) return Annotate(everyone.status(), "asking the other ranks");
    return recorded.ok() ? absl::FailedPreconditionError("another rank could not record its step")
                         : recorded;
  }
  return recorded;
}

absl::Status Executor::RunKernels() {
  using Clock = std::chrono::steady_clock;
  for (Step& step : steps_) {
    for (size_t producer : step.waits_for) {
      absl::Status waited = Wait(steps_[producer]);
      if (!waited.ok()) {
        WaitAll().IgnoreError();  // already failing: only make sure nothing is left in flight
        return waited;
      }
    }
    const Kernel& kernel = *step.node->kernel;
    if (whereabouts_ != nullptr) whereabouts_->EnterNode(step.label);
    const bool exposed = kernel.communicates() && !kernel.asynchronous();
    const Clock::time_point start = exposed ? Clock::now() : Clock::time_point();
    if (profiling_) step.timer->Start();
    absl::Status status = step.node->kernel->Run(step.io);
    if (profiling_) step.timer->Stop();
    if (!status.ok()) {
      WaitAll().IgnoreError();
      return Annotate(status, step.node->Describe());
    }
    step.pending = kernel.asynchronous();
    if (exposed) {
      exposed_wait_seconds_ += std::chrono::duration<double>(Clock::now() - start).count();
    }
  }
  if (whereabouts_ != nullptr) whereabouts_->LeaveStep();
  LS_RETURN_IF_ERROR(WaitAll());
  return profiling_ ? AddProfiledTimes() : absl::OkStatus();
}

// Kernel times as the device measured them (on CUDA this waits for the step to finish).
absl::Status Executor::AddProfiledTimes() {
  for (Step& step : steps_) {
    LS_ASSIGN_OR_RETURN(double seconds, step.timer->Seconds());
    step.seconds += seconds;
  }
  return absl::OkStatus();
}

void Executor::EnableProfiling(bool on) {
  profiling_ = on;
  for (Step& step : steps_) {
    if (on && step.timer == nullptr) step.timer = backend_->CreateTimer(device_.index);
  }
}

absl::Status Executor::Wait(Step& step) {
  if (!step.pending) return absl::OkStatus();
  step.pending = false;
  const auto start = std::chrono::steady_clock::now();
  absl::Status status = step.node->kernel->Wait();
  exposed_wait_seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return Annotate(status, step.node->Describe());
}

// In step order, which is the order the collectives were queued in.
absl::Status Executor::WaitAll() {
  absl::Status first;
  for (Step& step : steps_) first.Update(Wait(step));
  return first;
}

std::vector<Executor::StepWaits> Executor::WaitPlan() const {
  std::vector<StepWaits> plan;
  for (const Step& step : steps_) {
    StepWaits waits{step.node, {}, step.node->kernel->asynchronous()};
    for (size_t producer : step.waits_for) waits.waits_for.push_back(steps_[producer].node);
    plan.push_back(std::move(waits));
  }
  return plan;
}

std::vector<Executor::NodeTime> Executor::Profile() const {
  std::vector<NodeTime> times;
  for (const Step& step : steps_) times.push_back({step.node, step.seconds});
  return times;
}

void Executor::ResetProfile() {
  exposed_wait_seconds_ = 0.0;
  for (Step& step : steps_) step.seconds = 0.0;
}

absl::StatusOr<const Value*> Executor::FindInput(absl::string_view name) const {
  const Node* node = graph_->FindInput(name);
  if (node == nullptr) return absl::NotFoundError(absl::StrCat("graph has no input '", name, "'"));
  return node->output();
}

absl::StatusOr<const Value*> Executor::FindOutput(absl::string_view name) const {
  const GraphOutput* output = graph_->FindOutput(name);
  if (output == nullptr) {
    return absl::NotFoundError(absl::StrCat("graph has no output '", name, "'"));
  }
  return output->value;
}

absl::StatusOr<Tensor> Executor::PlainView(const Value& value, absl::string_view name) const {
  if (value.layout != Layout::kPlain) {
    return absl::FailedPreconditionError(
        absl::StrCat("'", name, "' is kept in layout ", LayoutName(value.layout),
                     ", not plain: use ReadInput, WriteInput or ReadOutput for a plain copy"));
  }
  return ViewOf(value);
}

absl::StatusOr<Tensor> Executor::PlainCopy(const Value& value) const {
  LS_ASSIGN_OR_RETURN(Tensor plain,
                      Tensor::Allocate(value.shape(), value.dtype(), Device::CPU(), false));
  LS_RETURN_IF_ERROR(backend_->MakeCurrent(device_.index));
  LS_RETURN_IF_ERROR(backend_->Reorder(ViewOf(value), value.layout, plain, Layout::kPlain));
  return plain;
}

absl::StatusOr<Tensor> Executor::Input(absl::string_view name) const {
  LS_ASSIGN_OR_RETURN(const Value* value, FindInput(name));
  return PlainView(*value, name);
}

absl::StatusOr<Tensor> Executor::Output(absl::string_view name) const {
  LS_ASSIGN_OR_RETURN(const Value* value, FindOutput(name));
  return PlainView(*value, name);
}

absl::StatusOr<Tensor> Executor::ReadInput(absl::string_view name) const {
  LS_ASSIGN_OR_RETURN(const Value* value, FindInput(name));
  return PlainCopy(*value);
}

absl::StatusOr<Tensor> Executor::ReadOutput(absl::string_view name) const {
  LS_ASSIGN_OR_RETURN(const Value* value, FindOutput(name));
  return PlainCopy(*value);
}

absl::Status Executor::WriteInput(absl::string_view name, const Tensor& plain) const {
  LS_ASSIGN_OR_RETURN(const Value* value, FindInput(name));
  if (plain.shape() != value->shape() || plain.dtype() != value->dtype()) {
    return absl::InvalidArgumentError(
        absl::StrCat("input '", name, "' is ", TypeToString(value->type), ", got ",
                     DTypeName(plain.dtype()), ShapeToString(plain.shape())));
  }
  LS_RETURN_IF_ERROR(backend_->MakeCurrent(device_.index));
  return backend_->Reorder(plain, Layout::kPlain, ViewOf(*value), value->layout);
}

}  // namespace lockstep
