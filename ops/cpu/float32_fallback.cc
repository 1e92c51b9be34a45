// The CPU's fallback for bf16 and f16 nodes it has no kernel for, or whose oneDNN kernel would
// only emulate the dtype (a CPU without AVX512-BF16, f16 everywhere on oneDNN 2.6): the node's
// float32 twin (the same node with every bf16 and f16 value float32) runs on float32 copies that
// oneDNN reorders convert in the kernel's workspace. The twin decides the layouts, so a value
// keeps one layout in both dtypes and each conversion is a plain element-wise reorder.

#include <algorithm>
#include <memory>

#include "core/allocator.h"
#include "graph/kernel.h"
#include "ops/cpu/dnnl_util.h"

namespace lockstep {
namespace {

bool LowPrecision(DType dtype) { return dtype == DType::kBF16 || dtype == DType::kF16; }

// A copy of a node whose bf16 and f16 values are float32; kernels keep pointers to neither.
struct Twin {
  Node node;
  std::vector<std::unique_ptr<Value>> inputs;
};

std::unique_ptr<Value> Float32Copy(const Value& value) {
  auto copy = std::make_unique<Value>(value);
  if (LowPrecision(copy->type.dtype)) copy->type.dtype = DType::kF32;
  return copy;
}

std::unique_ptr<Twin> MakeTwin(const Node& node) {
  auto twin = std::make_unique<Twin>();
  twin->node.id = node.id;
  twin->node.op = node.op;
  twin->node.name = node.name;
  twin->node.attrs = node.attrs;
  for (const Value* input : node.inputs) {
    twin->inputs.push_back(Float32Copy(*input));
    twin->node.inputs.push_back(twin->inputs.back().get());
  }
  for (const auto& output : node.outputs) {
    twin->node.outputs.push_back(Float32Copy(*output));
    twin->node.outputs.back()->producer = &twin->node;
  }
  return twin;
}

// A low-precision value's float32 copy in the workspace, and the reorder between them.
struct Conversion {
  size_t index;   // of the input or output
  size_t offset;  // of the float32 copy in the workspace
  dnnl_util::DnnlStep reorder;
};

class Float32FallbackKernel : public Kernel {
 public:
  // `kernel` runs `twin`, the float32 copy of `node`.
  Float32FallbackKernel(const Node& node, std::unique_ptr<Twin> twin,
                        std::unique_ptr<Kernel> kernel)
      : twin_(std::move(twin)), kernel_(std::move(kernel)) {
    size_t scratch = kernel_->WorkspaceBytes();
    size_t copies = 0;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (LowPrecision(node.inputs[i]->dtype())) {
        inputs_.push_back(Prepare(i, *node.inputs[i], /*input=*/true, &scratch, &copies));
      }
    }
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (LowPrecision(node.outputs[i]->dtype())) {
        outputs_.push_back(Prepare(i, *node.outputs[i], /*input=*/false, &scratch, &copies));
      }
    }
    // The copies follow the scratch that the twin and the reorders share (they run in turn).
    const size_t base = AlignUp(scratch);
    for (auto* conversions : {&inputs_, &outputs_}) {
      for (Conversion& c : *conversions) c.offset += base;
    }
    workspace_bytes_ = base + copies;
  }
  size_t WorkspaceBytes() const override { return workspace_bytes_; }

  absl::Status Run(const KernelIO& io) override {
    char* workspace = static_cast<char*>(io.workspace);
    KernelIO twin_io{io.inputs, io.outputs, io.workspace, io.stream};
    for (Conversion& c : inputs_) {
      Tensor& copy = twin_io.inputs[c.index];  // the input's shape, float32
      copy = Tensor::Wrap(workspace + c.offset, copy.shape(), DType::kF32);
      LS_RETURN_IF_ERROR(c.reorder.Run(
          {{DNNL_ARG_FROM, io.inputs[c.index].raw_data()}, {DNNL_ARG_TO, copy.raw_data()}},
          io.workspace));
    }
    for (const Conversion& c : outputs_) {
      Tensor& copy = twin_io.outputs[c.index];  // the output's shape, float32
      copy = Tensor::Wrap(workspace + c.offset, copy.shape(), DType::kF32);
    }
    LS_RETURN_IF_ERROR(kernel_->Run(twin_io));
    for (Conversion& c : outputs_) {
      LS_RETURN_IF_ERROR(c.reorder.Run({{DNNL_ARG_FROM, twin_io.outputs[c.index].raw_data()},
                                        {DNNL_ARG_TO, io.outputs[c.index].raw_data()}},
                                       io.workspace));
    }
    return absl::OkStatus();
  }

 private:
  // The reorder low -> float32 for an input, float32 -> low for an output, in the value's
  // layout; its float32 copy at `*copies` bytes past the shared scratch.
  static Conversion Prepare(size_t index, const Value& value, bool input, size_t* scratch,
                            size_t* copies) {
    const dnnl::memory::desc low = dnnl_util::Desc(value.shape(), value.dtype(), value.layout);
    const dnnl::memory::desc wide = dnnl_util::Desc(value.shape(), DType::kF32, value.layout);
    Conversion c{index, *copies,
                 input ? dnnl_util::ReorderStep(low, wide) : dnnl_util::ReorderStep(wide, low)};
    *scratch = std::max(*scratch, c.reorder.scratchpad_bytes());
    *copies += AlignUp(wide.get_size());
    return c;
  }

  std::unique_ptr<Twin> twin_;
  std::unique_ptr<Kernel> kernel_;
  std::vector<Conversion> inputs_, outputs_;
  size_t workspace_bytes_ = 0;
};

// The float32 kernel the twin of a node runs.
absl::StatusOr<const KernelDef*> TwinDef(const Twin& twin) {
  return KernelRegistry::Global().Find(twin.node, DeviceType::kCPU);
}

absl::StatusOr<std::unique_ptr<Kernel>> CreateFallback(const Node& node, const KernelContext& ctx) {
  std::unique_ptr<Twin> twin = MakeTwin(node);
  LS_ASSIGN_OR_RETURN(const KernelDef* def, TwinDef(*twin));
  LS_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> kernel, def->create(twin->node, ctx));
  try {
    return std::make_unique<Float32FallbackKernel>(node, std::move(twin), std::move(kernel));
  } catch (const dnnl::error& e) {
    return dnnl_util::ErrorStatus(e, "building the float32 conversions", __FILE__, __LINE__);
  }
}

// The twin's layouts, so each conversion keeps the layout. Without a float32 kernel, plain: the
// kernel's factory reports the missing kernel.
LayoutChoice FallbackLayouts(const Node& node, const std::vector<Layout>& producer_layouts,
                             const SharedLayouts& shared) {
  std::unique_ptr<Twin> twin = MakeTwin(node);
  absl::StatusOr<const KernelDef*> def = TwinDef(*twin);
  if (!def.ok()) return PlainLayouts(node, producer_layouts, shared);
  return (*def)->layouts(twin->node, producer_layouts, shared);
}

[[maybe_unused]] const bool kRegistered = [] {
  for (DType dtype : {DType::kBF16, DType::kF16}) {
    KernelRegistry::Global().RegisterFallback(
        DeviceType::kCPU, dtype, {.create = CreateFallback, .layouts = FallbackLayouts});
  }
  return true;
}();

}  // namespace
}  // namespace lockstep
