#include "graph/kernel.h"

#include "core/logging.h"

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

Layout BlockedIfEligible(const Value& value) {
  return BlockedLayoutEligible(value.shape(), value.dtype()) ? NativeBlockedLayout()
                                                             : Layout::kPlain;
}

LayoutChoice BlockedWhereEligible(const Node& node, const std::vector<Layout>&) {
  LayoutChoice choice;
  for (const Value* input : node.inputs) choice.inputs.push_back(BlockedIfEligible(*input));
  for (const auto& output : node.outputs) choice.outputs.push_back(BlockedIfEligible(*output));
  return choice;
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
