#include "graph/kernel.h"

#include "core/logging.h"
#include "graph/builder.h"

namespace lockstep {

LayoutChoice PlainLayouts(const Node& node, const std::vector<Layout>&) {
  return {std::vector<Layout>(node.inputs.size(), Layout::kPlain),
          std::vector<Layout>(node.outputs.size(), Layout::kPlain)};
}

LayoutChoice SameLayoutAsFirstInput(const Node& node, const std::vector<Layout>& producer_layouts) {
  Layout layout = producer_layouts.empty() ? Layout::kPlain : producer_layouts[0];
  LayoutChoice choice;
  for (const Value* input : node.inputs) {
    choice.inputs.push_back(input->shape() == node.inputs[0]->shape() ? layout : Layout::kPlain);
  }
  for (const auto& output : node.outputs) {
    choice.outputs.push_back(output->shape() == node.inputs[0]->shape() ? layout : Layout::kPlain);
  }
  return choice;
}

LayoutChoice SameLayoutAsEachInput(const Node& node, const std::vector<Layout>& producer_layouts) {
  LayoutChoice choice{producer_layouts, {}};
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    choice.outputs.push_back(i < producer_layouts.size() ? producer_layouts[i] : Layout::kPlain);
  }
  return choice;
}

LayoutChoice InputLayoutsPlainOutputs(const Node& node,
                                      const std::vector<Layout>& producer_layouts) {
  return {producer_layouts, std::vector<Layout>(node.outputs.size(), Layout::kPlain)};
}

absl::Status ReorderInto(const Tensor& from, Layout from_layout, Tensor to, Layout to_layout) {
  LS_CHECK(from.shape() == to.shape() && from.dtype() == to.dtype())
      << "reorder of " << ShapeToString(from.shape()) << " into " << ShapeToString(to.shape());
  if (from_layout == to_layout) {
    to.CopyFrom(from);  // between devices too
    return absl::OkStatus();
  }
  if (from.device().type != DeviceType::kCPU || to.device().type != DeviceType::kCPU) {
    return absl::UnimplementedError(absl::StrCat("reorder from ", LayoutName(from_layout), " to ",
                                                 LayoutName(to_layout), " on ",
                                                 from.device().ToString(), " and ",
                                                 to.device().ToString(), ": only the CPU reorders"));
  }
  Graph graph;
  Builder b(&graph);
  Value* x = b.Input("x", from.shape(), from.dtype());
  Value* y = b.Op1("Reorder", {x}, {{"layout", std::string(LayoutName(to_layout))}});
  LS_RETURN_IF_ERROR(b.status());
  x->layout = from_layout;
  y->layout = to_layout;
  LS_ASSIGN_OR_RETURN(const KernelDef* def,
                      KernelRegistry::Global().Find(*y->producer, DeviceType::kCPU));
  LS_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> kernel,
                      def->create(*y->producer, KernelContext{Device::CPU(), PassConfig()}));
  Tensor workspace = Tensor::Empty({static_cast<int64_t>(kernel->WorkspaceBytes())}, DType::kU8);
  return kernel->Run({.inputs = {from}, .outputs = {to}, .workspace = workspace.raw_data()});
}

KernelRegistry& KernelRegistry::Global() {
  static auto* registry = new KernelRegistry();
  return *registry;
}

bool KernelRegistry::Register(KernelDef def) {
  auto key = std::make_tuple(def.op, def.device, def.dtype);
  LS_CHECK(kernels_.count(key) == 0) << "kernel for " << def.op << " registered twice";
  kernels_.emplace(key, std::move(def));
  return true;
}

bool KernelRegistry::Has(const std::string& op, DeviceType device, DType dtype) const {
  return kernels_.contains(std::make_tuple(op, device, dtype));
}

std::vector<std::pair<std::string, DType>> KernelRegistry::Registered(DeviceType device) const {
  std::vector<std::pair<std::string, DType>> keys;
  for (const auto& [key, def] : kernels_) {
    if (std::get<1>(key) == device) keys.emplace_back(std::get<0>(key), std::get<2>(key));
  }
  return keys;
}

absl::StatusOr<const KernelDef*> KernelRegistry::Find(const Node& node, DeviceType device) const {
  DType dtype = node.inputs.empty() ? node.output(0)->dtype() : node.inputs[0]->dtype();
  auto it = kernels_.find(std::make_tuple(node.op->name(), device, dtype));
  if (it == kernels_.end()) {
    return absl::UnimplementedError(absl::StrCat("no ", device == DeviceType::kCPU ? "CPU" : "CUDA",
                                                 " kernel for ", node.Describe(), " with dtype ",
                                                 DTypeName(dtype)));
  }
  return &it->second;
}

}  // namespace lockstep
