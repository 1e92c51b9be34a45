// oneDNN batch normalization. Activations (x, y, dy, dx) are blocked when eligible so BN sits
// between convolutions without reorders; the per-channel vectors are plain (C). BatchNormRelu and
// its gradient are the same primitives with oneDNN's fused ReLU, whose mask the forward writes
// into its output 5 and the backward reads from its input 5. Data (x, y, dy, dx) may be bf16
// where the CPU computes it natively (elsewhere bf16 and f16 run ops/cpu/batch_norm_loops.h);
// statistics are always float32, and so are the scale and shift oneDNN takes: where the graph
// holds them (and their gradients) in bf16 or f16, the kernel converts them in its workspace.

#include <optional>
#include <vector>

#include "core/allocator.h"
#include "core/backend.h"
#include "graph/kernel.h"
#include "ops/cpu/batch_norm_loops.h"
#include "ops/cpu/convert_floats.h"
#include "ops/cpu/cpu_layouts.h"
#include "ops/cpu/dnnl_util.h"

namespace lockstep {
namespace {

using dnnl::normalization_flags;

dnnl::memory::desc ActivationDesc(const Value& value) {
  return dnnl_util::Desc(value.shape(), value.dtype(), value.layout);
}

// Descriptor of the (C) vectors: scale, shift, mean, variance.
dnnl::memory::desc ChannelDesc(const Node& node) {
  return dnnl_util::Desc({node.inputs[0]->shape()[1]}, DType::kF32);
}

float Epsilon(const Node& node) { return static_cast<float>(node.attrs.GetFloat("epsilon")); }

const normalization_flags kScaleShift =
    normalization_flags::use_scale | normalization_flags::use_shift;

// Whether the node is one of the fused BatchNorm + ReLU ops.
bool FusesRelu(const Node& node) { return node.op->name().starts_with("BatchNormRelu"); }

normalization_flags TrainingFlags(const Node& node) {
  return FusesRelu(node) ? kScaleShift | normalization_flags::fuse_norm_relu : kScaleShift;
}

dnnl::batch_normalization_forward::primitive_desc ForwardTraining(
    const Node& node, const dnnl::primitive_attr& attr) {
  dnnl::batch_normalization_forward::desc desc(dnnl::prop_kind::forward_training,
                                               ActivationDesc(*node.inputs[0]), Epsilon(node),
                                               TrainingFlags(node));
  return {desc, attr, dnnl_util::CpuEngine()};
}

// The forward primitive with its arguments declared: x, y, and the (C) scale, shift, mean and
// variance (outputs in training, running statistics in inference).
dnnl_util::DnnlStep ForwardStep(const dnnl::batch_normalization_forward::primitive_desc& pd,
                                const Node& node) {
  dnnl_util::DnnlStep step(dnnl::batch_normalization_forward(pd), pd.scratchpad_desc());
  step.Arg(DNNL_ARG_SRC, ActivationDesc(*node.inputs[0]));
  step.Arg(DNNL_ARG_DST, ActivationDesc(*node.output(0)));
  for (int arg : {DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE}) {
    step.Arg(arg, ChannelDesc(node));
  }
  return step;
}

// The (C) scale, shift and their gradients in float32 for oneDNN, where the graph holds them in
// bf16 or f16: slots in the kernel's workspace after the primitive's scratchpad, filled from the
// vectors the primitive reads before it runs and copied into those it writes after.
class Float32Vectors {
 public:
  // The node's (C) vectors the primitive reads and those it writes, by (input or output) index.
  Float32Vectors(const Node& node, const std::vector<int>& read, const std::vector<int>& written,
                 size_t scratchpad)
      : channels_(node.inputs[0]->shape()[1]) {
    size_t offset = AlignUp(scratchpad);
    for (int i : read) Add(node.inputs[i]->dtype(), true, i, &offset);
    for (int i : written) Add(node.output(i)->dtype(), false, i, &offset);
    workspace_bytes_ = offset;
  }
  size_t WorkspaceBytes() const { return workspace_bytes_; }

  // Where the primitive finds input `i` (converted first) or output `i`.
  void* Input(int i, const KernelIO& io) const {
    const Slot* slot = Find(true, i);
    if (slot == nullptr) return io.inputs[i].raw_data();
    void* f32 = SlotData(*slot, io);
    cpu::ConvertFloats(io.inputs[i].raw_data(), slot->dtype, f32, DType::kF32, channels_);
    return f32;
  }
  void* Output(int i, const KernelIO& io) const {
    const Slot* slot = Find(false, i);
    return slot == nullptr ? io.outputs[i].raw_data() : SlotData(*slot, io);
  }
  // After the primitive: the float32 gradients into the graph's outputs.
  void WriteOutputs(const KernelIO& io) const {
    for (const Slot& slot : slots_) {
      if (slot.read) continue;
      cpu::ConvertFloats(SlotData(slot, io), DType::kF32, io.outputs[slot.index].raw_data(),
                         slot.dtype, channels_);
    }
  }

 private:
  struct Slot {
    bool read;
    int index;
    DType dtype;    // the graph's
    size_t offset;  // in the workspace
  };

  void Add(DType dtype, bool read, int index, size_t* offset) {
    if (dtype == DType::kF32) return;
    slots_.push_back({read, index, dtype, *offset});
    *offset += AlignUp(channels_ * sizeof(float));
  }
  const Slot* Find(bool read, int index) const {
    for (const Slot& slot : slots_) {
      if (slot.read == read && slot.index == index) return &slot;
    }
    return nullptr;
  }
  static void* SlotData(const Slot& slot, const KernelIO& io) {
    return static_cast<char*>(io.workspace) + slot.offset;
  }

  int64_t channels_;
  std::vector<Slot> slots_;
  size_t workspace_bytes_ = 0;
};

// Batch statistics from oneDNN, then the running averages, which oneDNN does not keep.
class BatchNormKernel : public Kernel {
 public:
  explicit BatchNormKernel(const Node& node) : running_(node) {
    const auto pd = ForwardTraining(node, dnnl_util::ScratchpadAttr());
    step_ = ForwardStep(pd, node);
    if (FusesRelu(node))
      step_.Arg(DNNL_ARG_WORKSPACE, dnnl_util::WorkspaceDesc(pd, *node.output(5)));
    vectors_.emplace(node, std::vector<int>{1, 2}, std::vector<int>{}, step_.scratchpad_bytes());
  }
  size_t WorkspaceBytes() const override { return vectors_->WorkspaceBytes(); }

  absl::Status Run(const KernelIO& io) override {
    // The mask's slot is unused (and absent) without the fused ReLU.
    void* mask = io.outputs.size() > 5 ? io.outputs[5].raw_data() : nullptr;
    void* scale = vectors_->Input(1, io);                                   // (C) float32
    void* shift = vectors_->Input(2, io);                                   // (C) float32
    LS_RETURN_IF_ERROR(step_.Run({{DNNL_ARG_SRC, io.inputs[0].raw_data()},  // (N, C, ...)
                                  {DNNL_ARG_SCALE, scale},
                                  {DNNL_ARG_SHIFT, shift},
                                  {DNNL_ARG_DST, io.outputs[0].raw_data()},       // (N, C, ...)
                                  {DNNL_ARG_MEAN, io.outputs[1].raw_data()},      // (C)
                                  {DNNL_ARG_VARIANCE, io.outputs[2].raw_data()},  // (C)
                                  {DNNL_ARG_WORKSPACE, mask}},
                                 io.workspace));
    running_.Update(io);
    return absl::OkStatus();
  }

 private:
  cpu::RunningStatistics running_;
  dnnl_util::DnnlStep step_;
  std::optional<Float32Vectors> vectors_;
};

class BatchNormGradKernel : public Kernel {
 public:
  explicit BatchNormGradKernel(const Node& node) {
    const Value& x = *node.inputs[0];
    const Value& dy = *node.inputs[4];
    dnnl::batch_normalization_backward::desc desc(dnnl::prop_kind::backward, ActivationDesc(dy),
                                                  ActivationDesc(x), Epsilon(node),
                                                  TrainingFlags(node));
    dnnl::batch_normalization_backward::primitive_desc pd(
        desc, dnnl_util::ScratchpadAttr(), dnnl_util::CpuEngine(),
        ForwardTraining(node, dnnl::primitive_attr()));
    step_ = dnnl_util::DnnlStep(dnnl::batch_normalization_backward(pd), pd.scratchpad_desc());
    step_.Arg(DNNL_ARG_SRC, ActivationDesc(x));
    step_.Arg(DNNL_ARG_DIFF_DST, ActivationDesc(dy));
    step_.Arg(DNNL_ARG_DIFF_SRC, ActivationDesc(*node.output(0)));
    for (int arg : {DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE,
                    DNNL_ARG_DIFF_SCALE, DNNL_ARG_DIFF_SHIFT}) {
      step_.Arg(arg, ChannelDesc(node));
    }
    if (FusesRelu(node))
      step_.Arg(DNNL_ARG_WORKSPACE, dnnl_util::WorkspaceDesc(pd, *node.inputs[5]));
    vectors_.emplace(node, std::vector<int>{1}, std::vector<int>{1, 2}, step_.scratchpad_bytes());
  }
  size_t WorkspaceBytes() const override { return vectors_->WorkspaceBytes(); }

  absl::Status Run(const KernelIO& io) override {
    void* mask = io.inputs.size() > 5 ? io.inputs[5].raw_data() : nullptr;
    void* gamma = vectors_->Input(1, io);                                   // (C) float32
    LS_RETURN_IF_ERROR(step_.Run({{DNNL_ARG_SRC, io.inputs[0].raw_data()},  // (N, C, ...)
                                  {DNNL_ARG_SCALE, gamma},
                                  // oneDNN 2.6 insists on a shift argument here but never reads it.
                                  {DNNL_ARG_SHIFT, gamma},
                                  {DNNL_ARG_MEAN, io.inputs[2].raw_data()},        // (C) saved mean
                                  {DNNL_ARG_VARIANCE, io.inputs[3].raw_data()},    // (C) saved var
                                  {DNNL_ARG_DIFF_DST, io.inputs[4].raw_data()},    // (N, C, ...)
                                  {DNNL_ARG_DIFF_SRC, io.outputs[0].raw_data()},   // (N, C, ...)
                                  {DNNL_ARG_DIFF_SCALE, vectors_->Output(1, io)},  // (C) float32
                                  {DNNL_ARG_DIFF_SHIFT, vectors_->Output(2, io)},  // (C) float32
                                  {DNNL_ARG_WORKSPACE, mask}},
                                 io.workspace));
    vectors_->WriteOutputs(io);
    return absl::OkStatus();
  }

 private:
  dnnl_util::DnnlStep step_;
  std::optional<Float32Vectors> vectors_;
};

class BatchNormInferenceKernel : public Kernel {
 public:
  explicit BatchNormInferenceKernel(const Node& node) {
    dnnl::batch_normalization_forward::desc desc(
        dnnl::prop_kind::forward_inference, ActivationDesc(*node.inputs[0]), Epsilon(node),
        kScaleShift | normalization_flags::use_global_stats);
    step_ = ForwardStep({desc, dnnl_util::ScratchpadAttr(), dnnl_util::CpuEngine()}, node);
    vectors_.emplace(node, std::vector<int>{1, 2}, std::vector<int>{}, step_.scratchpad_bytes());
  }
  size_t WorkspaceBytes() const override { return vectors_->WorkspaceBytes(); }

  absl::Status Run(const KernelIO& io) override {
    void* scale = vectors_->Input(1, io);                       // (C) float32
    void* shift = vectors_->Input(2, io);                       // (C) float32
    return step_.Run({{DNNL_ARG_SRC, io.inputs[0].raw_data()},  // (N, C, ...)
                      {DNNL_ARG_SCALE, scale},
                      {DNNL_ARG_SHIFT, shift},
                      {DNNL_ARG_MEAN, io.inputs[3].raw_data()},      // (C)
                      {DNNL_ARG_VARIANCE, io.inputs[4].raw_data()},  // (C)
                      {DNNL_ARG_DST, io.outputs[0].raw_data()}},     // (N, C, ...)
                     io.workspace);
  }

 private:
  dnnl_util::DnnlStep step_;
  std::optional<Float32Vectors> vectors_;
};

// Float32 from oneDNN; bf16 from oneDNN where the CPU computes it natively, else (and f16
// always) from the own loops, which read the 16-bit data directly where the float32 fallback would
// convert float32 copies around oneDNN's float32 kernel. One layout function for all: the loops
// take oneDNN's layouts.
template <typename K>
bool RegisterBatchNorm(const char* op) {
  const KernelFactory dnnl = dnnl_util::DnnlFactory<K>();
  auto loops = [](const Node& node, const KernelContext&) { return cpu::MakeBatchNormLoops(node); };
  auto bf16 = [dnnl, loops](const Node& node, const KernelContext& ctx) {
    return BackendOf(ctx.device).ComputesNatively(DType::kBF16) ? dnnl(node, ctx)
                                                                : loops(node, ctx);
  };
  KernelRegistry& registry = KernelRegistry::Global();
  return registry.Register({.op = op, .create = dnnl, .layouts = BlockedWhereEligible}) &&
         registry.Register(
             {.op = op, .dtype = DType::kBF16, .create = bf16, .layouts = BlockedWhereEligible}) &&
         registry.Register(
             {.op = op, .dtype = DType::kF16, .create = loops, .layouts = BlockedWhereEligible});
}

[[maybe_unused]] const bool kRegistered =
    RegisterBatchNorm<BatchNormKernel>("BatchNorm") &&
    RegisterBatchNorm<BatchNormKernel>("BatchNormRelu") &&
    RegisterBatchNorm<BatchNormGradKernel>("BatchNormGrad") &&
    RegisterBatchNorm<BatchNormGradKernel>("BatchNormReluGrad") &&
    RegisterBatchNorm<BatchNormInferenceKernel>("BatchNormInference");

}  // namespace
}  // namespace lockstep
