// The CPU's fallback for bf16 and f16 nodes it has no kernel for, or whose oneDNN kernel would
// only emulate the dtype (a CPU without AVX512-BF16, f16 everywhere on oneDNN 2.6): the node's
// float32 twin (the same node with every bf16 and f16 value float32) runs on float32 copies in the
// kernel's workspace. The twin decides the layouts, so a value keeps one layout in both dtypes
// and each conversion is element by element (ops/cpu/convert_floats.h).

#include <memory>
#include <vector>

#include "core/allocator.h"
#include "graph/kernel.h"
#include "ops/cpu/convert_floats.h"

namespace lockstep {
namespace {

// A copy of a node whose bf16 and f16 values are float32; kernels keep pointers to neither.
struct Twin {
  Node node;
  std::vector<std::unique_ptr<Value>> inputs;
};

std::unique_ptr<Value> Float32Copy(const Value& value) {
  auto copy = std::make_unique<Value>(value);
  if (IsLowPrecision(copy->type.dtype)) copy->type.dtype = DType::kF32;
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

// A low-precision input's or output's float32 copy in the workspace.
struct Conversion {
  size_t index;   // of the input or output
  size_t offset;  // of the float32 copy in the workspace
  DType dtype;    // the graph's
};

class Float32FallbackKernel : public Kernel {
 public:
  // `kernel` runs `twin`, the float32 copy of `node`.
  Float32FallbackKernel(const Node& node, std::unique_ptr<Twin> twin,
                        std::unique_ptr<Kernel> kernel)
      : twin_(std::move(twin)), kernel_(std::move(kernel)) {
    // The copies follow the twin's scratch.
    size_t offset = AlignUp(kernel_->WorkspaceBytes());
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (IsLowPrecision(node.inputs[i]->dtype())) {
        inputs_.push_back({i, offset, node.inputs[i]->dtype()});
        offset +=
            AlignUp(LayoutBytes(node.inputs[i]->layout, node.inputs[i]->shape(), DType::kF32));
      }
    }
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (IsLowPrecision(node.outputs[i]->dtype())) {
        outputs_.push_back({i, offset, node.outputs[i]->dtype()});
        offset +=
            AlignUp(LayoutBytes(node.outputs[i]->layout, node.outputs[i]->shape(), DType::kF32));
      }
    }
    workspace_bytes_ = offset;
  }
  size_t WorkspaceBytes() const override { return workspace_bytes_; }

  absl::Status Run(const KernelIO& io) override {
    char* workspace = static_cast<char*>(io.workspace);
    KernelIO twin_io{io.inputs, io.outputs, io.workspace, io.stream};
    for (const Conversion& c : inputs_) {
      const Tensor& low = io.inputs[c.index];
      twin_io.inputs[c.index] = Tensor::Wrap(workspace + c.offset, low.shape(), DType::kF32);
      cpu::ConvertFloats(low.raw_data(), c.dtype, workspace + c.offset, DType::kF32, low.numel());
    }
    for (const Conversion& c : outputs_) {
      twin_io.outputs[c.index] =
          Tensor::Wrap(workspace + c.offset, io.outputs[c.index].shape(), DType::kF32);
    }
    LS_RETURN_IF_ERROR(kernel_->Run(twin_io));
    for (const Conversion& c : outputs_) {
      const Tensor& low = io.outputs[c.index];
      cpu::ConvertFloats(workspace + c.offset, DType::kF32, low.raw_data(), c.dtype, low.numel());
    }
    return absl::OkStatus();
  }

 private:
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
  absl::StatusOr<const KernelDef*> def = TwinDef(*twin);
  if (!def.ok()) {
    return absl::UnimplementedError(absl::StrCat(
        "no CPU kernel for ", node.Describe(), " in ",
        DTypeName(node.inputs.empty() ? node.output()->dtype() : node.inputs[0]->dtype()),
        ", nor in float32 to convert through"));
  }
  LS_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> kernel, (*def)->create(twin->node, ctx));
  return std::make_unique<Float32FallbackKernel>(node, std::move(twin), std::move(kernel));
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
