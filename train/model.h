#pragma once

// Model: a net, a loss and an optimizer compiled into one training-step graph (forward, loss,
// backward, Momentum update in place) and eval graphs that share its parameter and state memory.
//
//   Model model(models::ResNet50(10), SoftmaxCrossEntropy(), Momentum{.lr = CosineLr(0.1, 1000)},
//               {.batch_size = 32, .image_shape = {3, 64, 64}});
//   LS_RETURN_IF_ERROR(model.Train(10, train, {std::make_shared<LossMonitor>(20)}));
//   LS_ASSIGN_OR_RETURN(EvalResult result, model.Eval(val));
//
// Graph interface: data inputs "images" (N, C, H, W) f32, "labels" (N) i32 and, in training,
// "lr" f32[]; outputs "loss" and, in eval, "logits" and "correct".

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/amp.h"
#include "graph/compile.h"
#include "graph/executor.h"
#include "parallel/comm_group.h"
#include "parallel/context.h"
#include "parallel/options.h"
#include "train/callbacks.h"
#include "train/data.h"
#include "train/input_feed.h"
#include "train/layers.h"
#include "train/loss.h"
#include "train/optimizer.h"
#include "train/passes/apply_optimizer.h"

namespace lockstep::train {

struct ModelOptions {
  double loss_scale = 1.0;  // fixed: seeds the backward, divided out by the update
  int64_t batch_size = 32;
  Shape image_shape = {3, 224, 224};  // (C, H, W)
  uint64_t seed = 0;                  // parameter initialisation
  int num_threads = 0;                // OpenMP threads for the kernels; 0 keeps the setting
  // Data parallel over the world communicator of `context`; batch_size is per rank.
  parallel::ParallelOptions parallel;
  // Micro-batches whose gradients are summed before one update (and one AllReduce).
  int64_t accumulation_steps = 1;
  // Fused kernels where the device has them (CompileOptions::fuse_kernels).
  bool fuse_kernels = true;
  // Mixed precision in every graph the model compiles (graph/amp.h, MindSpore's amp_level):
  // O0 float32; above it the AutoMixedPrecision pass runs ops in amp_dtype (bf16 or f16), while
  // parameters, their gradients, optimizer state and checkpoints stay float32.
  AmpLevel amp_level = AmpLevel::kO0;
  DType amp_dtype = DType::kBF16;
  // Where the graphs run: memory, kernels and the gradient AllReduce (NCCL on CUDA). Batches,
  // the loss and the variables cross to and from the host; in training, the copy of each batch
  // overlaps the step before it (train/input_feed.h), fastest from HostBatchAllocator's memory.
  Device device = Device::CPU();
  // Training steps launched as one recorded piece of work each (a CUDA graph) after two warm-up
  // steps, where the device can record them (Executor::ReplayAfter); the CPU runs kernel by
  // kernel anyway.
  bool replay_steps = true;
  // Set: batches bring their images as uint8 (N, H, W, C), as decoded, and the device
  // normalizes them into the graphs' float32 (N, C, H, W) input (Backend::NormalizeImages): the
  // copy to a GPU carries a quarter of the bytes and the host does no float work. The data set
  // then ends before Normalize and HWC2CHW (ClassificationTransforms' `normalized`).
  std::optional<ImageNormalization> normalize_images;
  // Set: dynamic loss scaling instead of the fixed loss_scale (see DynamicLossScale).
  std::optional<DynamicLossScale> dynamic_loss_scale;
  // The ranks the model communicates with (parallel::Init): data parallel and SyncBatchNorm
  // need it; the model's collectives run in communication groups of its own over it.
  std::optional<parallel::Context> context;
  // What the passes and kernels of every graph the model compiles read, besides what the model
  // sets itself (e.g. MathOptions, ops/math_options.h).
  PassConfig config;
  // Set: each compilation writes its graph there as text before and after every pass.
  std::string dump_dir;
};

struct EvalResult {
  double accuracy = 0.0;
  double loss = 0.0;  // mean over samples
  int64_t samples = 0;
  int64_t correct = 0;  // samples whose top class is the label
};

struct BatchResult {
  Tensor logits;  // (N, classes), a copy
  double loss = 0.0;
  int64_t correct = 0;
};

// A net built into a graph: inputs "images" and "labels", output "loss" (and in eval mode
// "logits" and "correct"), with the parameters and state it created, in order.
struct NetGraph {
  std::unique_ptr<Graph> graph;
  std::vector<ParameterSpec> parameters;
};
absl::StatusOr<NetGraph> BuildNetGraph(const Layer& net, const Loss& loss, Mode mode,
                                       int64_t batch_size, const Shape& image_shape,
                                       bool sync_batch_norm = false);
// Elements of the trainable parameters (state such as running statistics not counted).
int64_t CountParameters(const std::vector<ParameterSpec>& specs);

class Model {
 public:
  Model(LayerPtr net, Loss loss, Momentum optimizer, ModelOptions options);

  // Builds and compiles the training graph and initialises the parameters; Train, Eval and the
  // step functions call it when it has not run yet.
  absl::Status Compile();
  absl::Status Train(int64_t epochs, DataSource& data, const Callbacks& callbacks = {});
  // Accuracy and mean loss over one pass of `data`, with the running statistics. In data
  // parallel each rank passes its own shard (without padding) and gets the counts of all, of
  // one model: the ranks agree their running statistics first (AgreeRunningStatistics).
  absl::StatusOr<EvalResult> Eval(DataSource& data);
  // Data parallel: makes the state each rank updates from its own batches (the net's batch-norm
  // running statistics) the same on every rank, their mean over the ranks
  // (parallel::AgreeOnMean), so that every rank holds one model. Collective: Eval and
  // ModelCheckpoint call it on every rank before they evaluate or save. Without an update since
  // the last agreement, or with SyncBatchNorm, the ranks hold the same bits already and nothing
  // changes. Training itself reads batch statistics, so it goes on as before; the averages of
  // averages it keeps then are what one average at the end would be, up to rounding. True when
  // the ranks held different statistics.
  absl::StatusOr<bool> AgreeRunningStatistics();

  // One training step on a full batch; returns its loss (before the update). Train pipelines
  // its steps: it stages the next batch while the step before computes.
  absl::StatusOr<double> TrainStep(const Batch& batch);
  // Dynamic loss scaling: whether the last update was skipped for non-finite gradients, and
  // the scale the next step uses. Fixed: false and the fixed scale.
  bool last_update_skipped() const { return last_update_skipped_; }
  absl::StatusOr<double> LossScale() const;
  // The eval graph on one batch of any size.
  absl::StatusOr<BatchResult> EvalBatch(const Batch& batch);

  // A parameter or state (running statistics, moments) by name: a plain copy (the flat buffers
  // keep convolution weights and their moments blocked).
  absl::StatusOr<Tensor> Variable(absl::string_view name) const;
  // Overwrites a parameter or state with a plain tensor of its shape and dtype.
  absl::Status SetVariable(absl::string_view name, const Tensor& value);
  const std::vector<ParameterSpec>& parameters() const { return parameters_; }
  // The training executor (null before Compile), e.g. to profile it.
  Executor* train_executor() const { return train_.executor.get(); }
  // What moves training batches to the device (null before Compile), e.g. to read its plan.
  InputFeed* train_feed() const { return train_feed_.get(); }
  int64_t global_step() const { return global_step_; }
  int64_t epochs_done() const { return epochs_done_; }
  // Where training continues (a resumed checkpoint): the steps and epochs done, and the batches
  // of the next epoch already trained, at which Train starts that epoch.
  void SetTrainPosition(int64_t global_step, int64_t epochs_done, int64_t start_batch);
  // The training run the model's checkpoints belong to (ckpt::CheckpointManager): unset on a
  // fresh model until ModelCheckpoint gives it the job's id; ResumeFromCheckpoint sets the id of
  // the run it resumed, so that the steps saved next continue that run.
  const std::optional<std::string>& run_id() const { return run_id_; }
  void set_run_id(std::string run_id) { run_id_ = std::move(run_id); }
  const ModelOptions& options() const { return options_; }
  // The host communicator of the ranks: the context's, or a world of one without a context.
  std::shared_ptr<parallel::Communicator> HostWorld() const;
  // The model's world group over the host communicator, for collectives of one's own between
  // steps (in one order with the model's); an error without a context.
  absl::StatusOr<parallel::CommGroup*> HostGroup() const;

 private:
  // One compiled training graph and views of its per-step inputs and its loss. With gradient
  // accumulation there are two: the micro-batch graph and the last one, which updates.
  struct StepGraph {
    std::unique_ptr<Executor> executor;
    Tensor images, labels, loss;
    Tensor control;  // "lr" in the updating graph, "accumulate_beta" in the micro-batch one
    Tensor gradients_finite;  // the updating graph's, under dynamic loss scaling
  };
  // What every compilation of the model shares: device, config (with the communication
  // groups), dump directory.
  CompileOptions BaseCompileOptions(const Executor* share_with) const;
  absl::StatusOr<StepGraph> CompileStepGraph(bool updates, const Executor* share_with);
  bool data_parallel() const {
    return options_.parallel.mode == parallel::ParallelMode::kDataParallel;
  }
  absl::Status SynchronizeReplicas() const;
  absl::Status CheckBatch(const Batch& batch, bool training) const;
  // A training step in three parts, so that Train can stage batch N+1 while step N computes.
  // Staging queues the batch's copy with the learning rate (or accumulation factor) of the step
  // after the last one queued; queuing runs the graph on the oldest staged batch; finishing
  // waits for the queued step and returns its loss.
  absl::Status StageTrainBatch(const Batch& batch);
  // Whether the next step queued ends a gradient accumulation and updates the parameters.
  bool NextStepUpdates() const { return micro_step_ + 1 == options_.accumulation_steps; }
  absl::Status QueueTrainStep();
  absl::StatusOr<double> FinishTrainStep();
  absl::StatusOr<Executor*> EvalExecutor(int64_t batch_size);
  absl::Status RunEpoch(DataSource& data, const Callbacks& callbacks);
  absl::Status InitializeVariables();
  // The training graph's parameter or state input `name`.
  absl::Status CheckVariable(absl::string_view name) const;

  LayerPtr net_;
  Loss loss_;
  Momentum optimizer_;
  ModelOptions options_;
  // Over options_.context (null without one); outlives the executors, whose kernels use it.
  std::shared_ptr<parallel::CommGroups> groups_;
  std::vector<ParameterSpec> parameters_;
  // What the ranks agreed parameters and state are stored in (parallel/shared_layouts.h); unset
  // without data parallelism. Every graph of the model shares it, so they share buffers.
  std::optional<std::vector<Layout>> shared_layouts_;
  StepGraph train_;                                    // updates the parameters
  StepGraph micro_;                                    // accumulates (accumulation_steps > 1)
  std::map<int64_t, std::unique_ptr<Executor>> eval_;  // by batch size
  int64_t micro_step_ = 0;                             // micro-batches since the last update
  int64_t global_step_ = 0;
  int64_t epochs_done_ = 0;
  int64_t start_batch_ = 0;  // of the next epoch
  std::optional<std::string> run_id_;
  bool last_update_skipped_ = false;
  std::unique_ptr<InputFeed> train_feed_, eval_feed_;  // made by Compile
  StepGraph* queued_ = nullptr;                        // queued and not finished yet
  int64_t queued_batch_ = 0;                           // train_feed_'s number of its batch
};

}  // namespace lockstep::train
