#include "train/model.h"

#include <chrono>

#include "absl/strings/str_join.h"
#include "core/backend.h"
#include "core/rng.h"
#include "core/threads.h"
#include "graph/builder.h"
#include "graph/serialize.h"
#include "parallel/passes/passes.h"
#include "parallel/replicas.h"
#include "parallel/shared_layouts.h"
#include "train/passes/accumulate_gradients.h"
#include "train/passes/apply_optimizer.h"

namespace lockstep::train {
namespace {

using Clock = std::chrono::steady_clock;

// Runs of a step graph before it is recorded for replay: the first uploads the kernels' tables
// and lets the libraries initialise lazily; the second is a margin for anything done on the
// second run only.
constexpr int kReplayWarmupSteps = 2;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A scalar of the executor's memory (on any device) read into the host.
template <typename T>
T ReadScalar(const Tensor& scalar) {
  Tensor host = Tensor::Empty(scalar.shape(), scalar.dtype());
  host.CopyFrom(scalar);
  return *host.data<T>();
}

// Calls `fn` on every callback, stopping at the first error.
template <typename Fn>
absl::Status ForEach(const Callbacks& callbacks, Fn fn) {
  for (const auto& callback : callbacks) LS_RETURN_IF_ERROR(fn(*callback));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<NetGraph> BuildNetGraph(const Layer& net, const Loss& loss, Mode mode,
                                       int64_t batch_size, const Shape& image_shape,
                                       bool sync_batch_norm) {
  if (image_shape.size() != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("image_shape must be (C, H, W), got ", ShapeToString(image_shape)));
  }
  NetGraph result{std::make_unique<Graph>(), {}};
  Builder b(result.graph.get());
  Shape shape = {batch_size};
  shape.insert(shape.end(), image_shape.begin(), image_shape.end());
  Value* images = b.Input("images", shape);
  Value* labels = b.Input("labels", {batch_size}, DType::kI32);
  NetContext ctx(&b, mode, &result.parameters);
  ctx.set_sync_batch_norm(sync_batch_norm);
  Value* logits = net.Build(ctx, images);
  Value* loss_value = loss.build(ctx.Child("loss"), logits, labels);
  Value* correct = mode == Mode::kEval ? ctx.Op1("AccuracyCount", {logits, labels}) : nullptr;
  LS_RETURN_IF_ERROR(
      Annotate(b.status(), absl::StrCat("building the net for images ", ShapeToString(shape))));
  result.graph->AddOutput("loss", loss_value, OutputKind::kResult);
  if (mode == Mode::kEval) {
    result.graph->AddOutput("logits", logits, OutputKind::kResult);
    result.graph->AddOutput("correct", correct, OutputKind::kResult);
  }
  return result;
}

int64_t CountParameters(const std::vector<ParameterSpec>& specs) {
  int64_t count = 0;
  for (const ParameterSpec& spec : specs) {
    if (spec.role == InputRole::kParameter) count += NumElements(spec.shape);
  }
  return count;
}

Model::Model(LayerPtr net, Loss loss, Momentum optimizer, ModelOptions options)
    : net_(std::move(net)),
      loss_(std::move(loss)),
      optimizer_(std::move(optimizer)),
      options_(std::move(options)) {
  if (options_.context.has_value()) {
    groups_ = std::make_shared<parallel::CommGroups>(*options_.context);
  }
}

std::shared_ptr<parallel::Communicator> Model::HostWorld() const {
  return options_.context.has_value() ? options_.context->HostWorld()
                                      : parallel::MakeSelfCommunicator();
}

absl::StatusOr<parallel::CommGroup*> Model::HostGroup() const {
  if (groups_ == nullptr) {
    return absl::InvalidArgumentError(
        "data parallel needs ModelOptions::context, the parallel::Context of parallel::Init");
  }
  return groups_->Find(parallel::kWorldGroup, Device::CPU());
}

CompileOptions Model::BaseCompileOptions(const Executor* share_with) const {
  CompileOptions compile{.device = options_.device,
                         .shared_layouts = shared_layouts_,
                         .share_buffers_with = share_with,
                         .config = options_.config,
                         .dump_dir = options_.dump_dir};
  if (groups_ != nullptr) compile.config.Set(groups_);
  if (options_.context.has_value() && options_.context->watchdog() != nullptr) {
    compile.whereabouts = options_.context->watchdog()->whereabouts();
  }
  compile.config.Set(AmpOptions{.level = options_.amp_level, .dtype = options_.amp_dtype});
  return compile;
}

absl::Status Model::Compile() {
  if (train_.executor != nullptr) return absl::OkStatus();
  if (options_.num_threads > 0) SetNumThreads(options_.num_threads);
  if (options_.accumulation_steps < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("accumulation_steps must be at least 1, got ", options_.accumulation_steps));
  }
  LS_RETURN_IF_ERROR(CheckAmpOptions({.level = options_.amp_level, .dtype = options_.amp_dtype}));
  if (data_parallel()) {
    LS_ASSIGN_OR_RETURN(parallel::CommGroup * group, HostGroup());
    LS_ASSIGN_OR_RETURN(shared_layouts_,
                        parallel::AgreeSharedLayouts(*group->communicator, options_.device));
  }
  LS_ASSIGN_OR_RETURN(train_, CompileStepGraph(/*updates=*/true, nullptr));
  if (options_.accumulation_steps > 1) {
    LS_ASSIGN_OR_RETURN(micro_, CompileStepGraph(/*updates=*/false, train_.executor.get()));
  }
  if (options_.replay_steps && options_.device.type != DeviceType::kCPU) {
    for (StepGraph* step : {&train_, &micro_}) {
      if (step->executor != nullptr) step->executor->ReplayAfter(kReplayWarmupSteps);
    }
  }
  LS_RETURN_IF_ERROR(InitializeVariables());
  train_feed_ = std::make_unique<InputFeed>(options_.device, options_.normalize_images);
  eval_feed_ = std::make_unique<InputFeed>(options_.device, options_.normalize_images);
  return data_parallel() ? SynchronizeReplicas() : absl::OkStatus();
}

// The pipeline after Autodiff: accumulation (when on), then in the updating graph the
// data-parallel AllReduce (when on) and the optimizer.
absl::StatusOr<Model::StepGraph> Model::CompileStepGraph(bool updates, const Executor* share_with) {
  LS_ASSIGN_OR_RETURN(NetGraph net,
                      BuildNetGraph(*net_, loss_, Mode::kTrain, options_.batch_size,
                                    options_.image_shape, options_.parallel.sync_batch_norm));
  CompileOptions compile = BaseCompileOptions(share_with);
  compile.autodiff = AutodiffOptions{.loss = "loss", .loss_scale = options_.loss_scale};
  compile.fuse_kernels = options_.fuse_kernels;
  const bool dynamic_scale = options_.dynamic_loss_scale.has_value();
  if (dynamic_scale) {
    // Added where both graphs of gradient accumulation have it, so that they share it.
    Builder(net.graph.get()).State(kLossScaleState, {});
    compile.autodiff->seeds = {{"loss", kLossScaleState}};
  }
  if (options_.accumulation_steps > 1) {
    compile.config.Set(updates ? MicroBatch::kLast : MicroBatch::kAccumulate);
    compile.after_autodiff.push_back(CreateAccumulateGradientsPass);
  }
  int64_t replicas = 1;
  if (updates && data_parallel()) {
    compile.config.Set(options_.parallel);
    compile.after_autodiff.push_back(parallel::CreateInsertAllReducePass);
    compile.after_autodiff.push_back(parallel::CreateFuseAllReducePass);
    if (options_.parallel.gradients_mean) replicas = groups_->context().size();
  }
  if (updates) {
    compile.config.Set(ApplyOptimizerOptions{.momentum = optimizer_.momentum,
                                             .weight_decay = optimizer_.weight_decay,
                                             .nesterov = optimizer_.nesterov,
                                             .accumulation_steps = options_.accumulation_steps,
                                             .replicas = replicas,
                                             .gradient_divisor = optimizer_.gradient_divisor,
                                             .dynamic_loss_scale = options_.dynamic_loss_scale});
    compile.after_autodiff.push_back(CreateApplyOptimizerPass);
  }
  StepGraph step;
  LS_ASSIGN_OR_RETURN(step.executor, ::lockstep::Compile(std::move(net.graph), compile));
  LS_ASSIGN_OR_RETURN(step.images, step.executor->Input("images"));
  LS_ASSIGN_OR_RETURN(step.labels, step.executor->Input("labels"));
  LS_ASSIGN_OR_RETURN(step.loss, step.executor->Output("loss"));
  LS_ASSIGN_OR_RETURN(step.control, step.executor->Input(updates ? "lr" : kAccumulateBetaInput));
  if (updates && dynamic_scale) {
    LS_ASSIGN_OR_RETURN(step.gradients_finite, step.executor->Output(kGradientsFiniteOutput));
  }
  if (updates) parameters_ = std::move(net.parameters);
  return step;
}

// Every rank compiled the same graph and starts from the same parameters and state. The check
// runs over the host communicator, on host copies of device buffers.
absl::Status Model::SynchronizeReplicas() const {
  LS_ASSIGN_OR_RETURN(parallel::CommGroup * group, HostGroup());
  const Executor& executor = *train_.executor;
  std::vector<Tensor> buffers = {executor.parameters(), executor.state()};
  const bool on_host = executor.device().type == DeviceType::kCPU;
  std::vector<Tensor> host = buffers;
  if (!on_host) {
    for (Tensor& buffer : host) buffer = Tensor::Empty(buffer.shape(), buffer.dtype());
    for (size_t i = 0; i < host.size(); ++i) host[i].CopyFrom(buffers[i]);
  }
  LS_RETURN_IF_ERROR(
      parallel::SynchronizeReplicas(*group->communicator, Fingerprint(executor.graph()), host));
  if (!on_host) {
    for (size_t i = 0; i < host.size(); ++i) buffers[i].CopyFrom(host[i]);
  }
  return absl::OkStatus();
}

// Parameter i draws from Philox stream i of the seed; moments and the count of good loss-scale
// steps start at zero.
absl::Status Model::InitializeVariables() {
  for (size_t i = 0; i < parameters_.size(); ++i) {
    Tensor value = Tensor::Empty(parameters_[i].shape, DType::kF32);
    parameters_[i].init.Fill(Philox(options_.seed, i), value);
    LS_RETURN_IF_ERROR(train_.executor->WriteInput(parameters_[i].name, value));
  }
  if (!options_.dynamic_loss_scale.has_value()) return absl::OkStatus();
  Tensor scale = Tensor::Empty({}, DType::kF32);
  *scale.data<float>() = static_cast<float>(options_.dynamic_loss_scale->initial);
  return train_.executor->WriteInput(kLossScaleState, scale);
}

absl::StatusOr<double> Model::LossScale() const {
  if (!options_.dynamic_loss_scale.has_value()) return options_.loss_scale;
  LS_ASSIGN_OR_RETURN(Tensor scale, Variable(kLossScaleState));
  return static_cast<double>(*scale.data<float>());
}

absl::Status Model::CheckBatch(const Batch& batch, bool training) const {
  const Tensor& images = batch.images;
  const int64_t n = images.defined() && images.rank() > 0 ? images.dim(0) : 0;
  // (C, H, W) as float32, or (H, W, C) as uint8 under normalize_images.
  const bool fed = options_.normalize_images.has_value();
  const Shape& chw = options_.image_shape;
  const Shape image = fed && chw.size() == 3 ? Shape{chw[1], chw[2], chw[0]} : chw;
  const DType dtype = fed ? DType::kU8 : DType::kF32;
  Shape expected = {n};
  expected.insert(expected.end(), image.begin(), image.end());
  if (n < 1 || images.shape() != expected || images.dtype() != dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch images must be ", DTypeName(dtype), " (N, ", absl::StrJoin(image, ", "),
                     "), got ", images.defined() ? DTypeName(images.dtype()) : "nothing",
                     images.defined() ? ShapeToString(images.shape()) : ""));
  }
  if (!batch.labels.defined() || batch.labels.shape() != Shape{n} ||
      batch.labels.dtype() != DType::kI32) {
    return absl::InvalidArgumentError(absl::StrCat("batch labels must be i32 [", n, "]"));
  }
  if (training && n != options_.batch_size) {
    return absl::InvalidArgumentError(absl::StrCat("a training batch of ", n,
                                                   " images, but the model was compiled for ",
                                                   options_.batch_size, " (drop the remainder)"));
  }
  return absl::OkStatus();
}

absl::Status Model::StageTrainBatch(const Batch& batch) {
  LS_RETURN_IF_ERROR(CheckBatch(batch, /*training=*/true));
  const float control = NextStepUpdates()  ? static_cast<float>(optimizer_.lr(global_step_))
                        : micro_step_ == 0 ? 0.0f
                                           : 1.0f;
  return train_feed_->Stage(batch.images, batch.labels, control);
}

absl::Status Model::QueueTrainStep() {
  const bool updates = NextStepUpdates();
  StepGraph& step = updates ? train_ : micro_;
  LS_ASSIGN_OR_RETURN(queued_batch_, train_feed_->Feed(step.images, step.labels, step.control));
  LS_RETURN_IF_ERROR(step.executor->Run());
  train_feed_->Note(InputFeed::Op::On::kComputeStream, InputFeed::Op::Kind::kRun,
                    absl::StrCat("step on batch ", queued_batch_));
  queued_ = &step;
  micro_step_ = updates ? 0 : micro_step_ + 1;
  if (updates) ++global_step_;
  return absl::OkStatus();
}

// Reading the loss (and the skip flag) into the host waits for the step.
absl::StatusOr<double> Model::FinishTrainStep() {
  StepGraph& step = *std::exchange(queued_, nullptr);
  train_feed_->Note(InputFeed::Op::On::kHost, InputFeed::Op::Kind::kWait,
                    absl::StrCat("step on batch ", queued_batch_));
  last_update_skipped_ =
      step.gradients_finite.defined() && ReadScalar<float>(step.gradients_finite) == 0.0f;
  return static_cast<double>(ReadScalar<float>(step.loss));
}

absl::StatusOr<double> Model::TrainStep(const Batch& batch) {
  LS_RETURN_IF_ERROR(Compile());
  LS_RETURN_IF_ERROR(StageTrainBatch(batch));
  LS_RETURN_IF_ERROR(QueueTrainStep());
  return FinishTrainStep();
}

absl::StatusOr<Executor*> Model::EvalExecutor(int64_t batch_size) {
  auto it = eval_.find(batch_size);
  if (it != eval_.end()) return it->second.get();
  LS_ASSIGN_OR_RETURN(NetGraph net,
                      BuildNetGraph(*net_, loss_, Mode::kEval, batch_size, options_.image_shape));
  LS_ASSIGN_OR_RETURN(
      std::unique_ptr<Executor> executor,
      ::lockstep::Compile(std::move(net.graph), BaseCompileOptions(train_.executor.get())));
  return (eval_[batch_size] = std::move(executor)).get();
}

absl::StatusOr<BatchResult> Model::EvalBatch(const Batch& batch) {
  LS_RETURN_IF_ERROR(Compile());
  LS_RETURN_IF_ERROR(CheckBatch(batch, /*training=*/false));
  LS_ASSIGN_OR_RETURN(Executor * executor, EvalExecutor(batch.images.dim(0)));
  LS_ASSIGN_OR_RETURN(Tensor images, executor->Input("images"));
  LS_ASSIGN_OR_RETURN(Tensor labels, executor->Input("labels"));
  LS_RETURN_IF_ERROR(eval_feed_->Stage(batch.images, batch.labels, 0.0f));
  LS_RETURN_IF_ERROR(eval_feed_->Feed(images, labels, Tensor()).status());
  LS_RETURN_IF_ERROR(executor->Run());
  LS_ASSIGN_OR_RETURN(Tensor logits, executor->ReadOutput("logits"));
  LS_ASSIGN_OR_RETURN(Tensor loss, executor->Output("loss"));
  LS_ASSIGN_OR_RETURN(Tensor correct, executor->Output("correct"));
  return BatchResult{logits, ReadScalar<float>(loss), ReadScalar<int32_t>(correct)};
}

absl::StatusOr<bool> Model::AgreeRunningStatistics() {
  LS_RETURN_IF_ERROR(Compile());
  if (!data_parallel()) return false;
  std::vector<const ParameterSpec*> statistics;
  int64_t elements = 0;
  for (const ParameterSpec& spec : parameters_) {
    if (spec.role != InputRole::kState) continue;
    statistics.push_back(&spec);
    elements += NumElements(spec.shape);
  }
  if (statistics.empty()) return false;
  // One buffer for all of them, so that one collective agrees them.
  Tensor values = Tensor::Empty({elements}, DType::kF32);
  int64_t offset = 0;
  for (const ParameterSpec* spec : statistics) {
    LS_ASSIGN_OR_RETURN(Tensor value, Variable(spec->name));
    values.View(offset * sizeof(float), value.shape(), DType::kF32).CopyFrom(value);
    offset += value.numel();
  }
  LS_ASSIGN_OR_RETURN(parallel::CommGroup * group, HostGroup());
  bool changed = false;
  LS_RETURN_IF_ERROR(group->RunNow("agreeing the running statistics", [&]() -> absl::Status {
    LS_ASSIGN_OR_RETURN(changed, parallel::AgreeOnMean(*group->communicator, values));
    return absl::OkStatus();
  }));
  if (!changed) return false;
  offset = 0;
  for (const ParameterSpec* spec : statistics) {
    LS_RETURN_IF_ERROR(
        SetVariable(spec->name, values.View(offset * sizeof(float), spec->shape, DType::kF32)));
    offset += NumElements(spec->shape);
  }
  return true;
}

absl::StatusOr<EvalResult> Model::Eval(DataSource& data) {
  LS_RETURN_IF_ERROR(AgreeRunningStatistics().status());
  LS_RETURN_IF_ERROR(data.Reset(0));
  // Correct answers, loss sum and samples; in data parallel, summed over every rank's shard.
  Tensor sums = Tensor::Zeros({3}, DType::kF64);
  double* sum = sums.data<double>();
  Batch batch;
  while (true) {
    LS_ASSIGN_OR_RETURN(bool more, data.Next(&batch));
    if (!more) break;
    LS_ASSIGN_OR_RETURN(BatchResult out, EvalBatch(batch));
    const int64_t n = batch.images.dim(0);
    sum[0] += static_cast<double>(out.correct);
    sum[1] += out.loss * static_cast<double>(n);
    sum[2] += static_cast<double>(n);
  }
  if (data_parallel()) {
    LS_ASSIGN_OR_RETURN(parallel::CommGroup * group, HostGroup());
    LS_RETURN_IF_ERROR(group->RunNow("evaluation counts", [&] {
      return group->communicator->AllReduce(sums, parallel::ReduceOp::kSum);
    }));
  }
  if (sum[2] == 0.0) return absl::InvalidArgumentError("evaluation data has no samples");
  return EvalResult{.accuracy = sum[0] / sum[2],
                    .loss = sum[1] / sum[2],
                    .samples = static_cast<int64_t>(sum[2]),
                    .correct = static_cast<int64_t>(sum[0])};
}

absl::Status Model::Train(int64_t epochs, DataSource& data, const Callbacks& callbacks) {
  LS_RETURN_IF_ERROR(Compile());
  LS_RETURN_IF_ERROR(ForEach(callbacks, [&](Callback& c) { return c.OnTrainBegin(*this); }));
  for (int64_t i = 0; i < epochs; ++i) LS_RETURN_IF_ERROR(RunEpoch(data, callbacks));
  return ForEach(callbacks, [&](Callback& c) { return c.OnTrainEnd(*this); });
}

absl::Status Model::RunEpoch(DataSource& data, const Callbacks& callbacks) {
  EpochInfo epoch{.epoch = epochs_done_ + 1, .first_step = start_batch_};
  const Clock::time_point epoch_start = Clock::now();
  LS_RETURN_IF_ERROR(data.ResetAt(epochs_done_, start_batch_));
  start_batch_ = 0;
  LS_RETURN_IF_ERROR(
      ForEach(callbacks, [&](Callback& c) { return c.OnEpochBegin(*this, epoch.epoch); }));
  double loss_sum = 0.0;
  Batch batch;
  auto where = [&](int64_t step) { return absl::StrCat("epoch ", epoch.epoch, " step ", step); };
  LS_ASSIGN_OR_RETURN(bool more, data.Next(&batch));
  if (more) LS_RETURN_IF_ERROR(Annotate(StageTrainBatch(batch), where(epoch.first_step + 1)));
  while (more) {
    StepInfo step{.epoch = epoch.epoch,
                  .step = epoch.first_step + epoch.steps + 1,
                  .global_step = global_step_ + 1,
                  .batch_size = batch.images.dim(0),
                  .lr = optimizer_.lr(global_step_)};
    const Clock::time_point step_start = Clock::now();
    LS_RETURN_IF_ERROR(Annotate(QueueTrainStep(), where(step.step)));
    // The next batch's copy runs while this step computes; whether there is one tells the
    // callbacks whether this step ends the epoch. The source may reuse this batch's memory. A
    // batch that cannot be staged fails its own step, after this one's callbacks.
    LS_RETURN_IF_ERROR(train_feed_->AwaitCopies());
    LS_ASSIGN_OR_RETURN(more, data.Next(&batch));
    const absl::Status staged = more ? StageTrainBatch(batch) : absl::OkStatus();
    absl::StatusOr<double> loss = FinishTrainStep();
    if (!loss.ok()) return Annotate(loss.status(), where(step.step));
    step.loss = *loss;
    step.seconds = SecondsSince(step_start);
    step.last_in_epoch = !more;
    if (options_.dynamic_loss_scale.has_value()) {
      step.update_skipped = last_update_skipped_;
      LS_ASSIGN_OR_RETURN(step.loss_scale, LossScale());
    }
    ++epoch.steps;
    epoch.images += step.batch_size;
    loss_sum += step.loss;
    LS_RETURN_IF_ERROR(ForEach(callbacks, [&](Callback& c) { return c.OnStepEnd(*this, step); }));
    LS_RETURN_IF_ERROR(Annotate(staged, where(step.step + 1)));
  }
  epoch.seconds = SecondsSince(epoch_start);
  epoch.mean_loss = epoch.steps > 0 ? loss_sum / static_cast<double>(epoch.steps) : 0.0;
  ++epochs_done_;
  return ForEach(callbacks, [&](Callback& c) { return c.OnEpochEnd(*this, epoch); });
}

void Model::SetTrainPosition(int64_t global_step, int64_t epochs_done, int64_t start_batch) {
  global_step_ = global_step;
  epochs_done_ = epochs_done;
  start_batch_ = start_batch;
}

absl::Status Model::CheckVariable(absl::string_view name) const {
  if (train_.executor == nullptr) {
    return absl::FailedPreconditionError("the model is not compiled yet");
  }
  const Node* input = train_.executor->graph().FindInput(name);
  if (input == nullptr || input->role() == InputRole::kData) {
    return absl::NotFoundError(absl::StrCat("the model has no parameter or state '", name, "'"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> Model::Variable(absl::string_view name) const {
  LS_RETURN_IF_ERROR(CheckVariable(name));
  return train_.executor->ReadInput(name);
}

absl::Status Model::SetVariable(absl::string_view name, const Tensor& value) {
  LS_RETURN_IF_ERROR(CheckVariable(name));
  return train_.executor->WriteInput(name, value);
}

}  // namespace lockstep::train
