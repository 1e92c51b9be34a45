#include "graph/kernel.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "core/backend.h"
#include "core/logging.h"

namespace lockstep {

Layout SharedLayouts::Pick(const std::vector<Layout>& candidates) const {
  for (Layout layout : allowed) {
    if (std::find(candidates.begin(), candidates.end(), layout) != candidates.end()) return layout;
  }
  return Layout::kPlain;
}

LayoutChoice PlainLayouts(const Node& node, const std::vector<Layout>&, const SharedLayouts&) {
  return {std::vector<Layout>(node.inputs.size(), Layout::kPlain),
          std::vector<Layout>(node.outputs.size(), Layout::kPlain)};
}

LayoutChoice SameLayoutAsFirstInput(const Node& node, const std::vector<Layout>& producer_layouts,
                                    const SharedLayouts&) {
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

LayoutChoice SameLayoutAsEachInput(const Node& node, const std::vector<Layout>& producer_layouts,
                                   const SharedLayouts&) {
  LayoutChoice choice{producer_layouts, {}};
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    choice.outputs.push_back(i < producer_layouts.size() ? producer_layouts[i] : Layout::kPlain);
  }
  return choice;
}

LayoutChoice InputLayoutsPlainOutputs(const Node& node, const std::vector<Layout>& producer_layouts,
                                      const SharedLayouts&) {
  return {producer_layouts, std::vector<Layout>(node.outputs.size(), Layout::kPlain)};
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

bool KernelRegistry::RegisterFallback(DeviceType device, DType dtype, KernelDef def) {
  LS_CHECK(fallbacks_.count({device, dtype}) == 0)
      << "fallback for " << DTypeName(dtype) << " registered twice";
  fallbacks_.emplace(std::make_pair(device, dtype), std::move(def));
  return true;
}

absl::StatusOr<const KernelDef*> KernelRegistry::Find(const Node& node, DeviceType device) const {
  DType dtype = node.inputs.empty() ? node.output(0)->dtype() : node.inputs[0]->dtype();
  auto it = kernels_.find(std::make_tuple(node.op->name(), device, dtype));
  const bool native =
      it != kernels_.end() &&
      (!it->second.needs_native_dtype || BackendOf(Device{device, 0}).ComputesNatively(dtype));
  if (!native) {
    auto fallback = fallbacks_.find({device, dtype});
    if (fallback != fallbacks_.end()) return &fallback->second;
  }
  if (it == kernels_.end()) {
    return absl::UnimplementedError(
        absl::StrCat("no ", absl::AsciiStrToUpper(DeviceTypeName(device)), " kernel for ",
                     node.Describe(), " with dtype ", DTypeName(dtype)));
  }
  return &it->second;
}

bool RegisterFloatKernels(KernelDef def) {
  for (DType dtype : kFloatDTypes) {
    def.dtype = dtype;
    KernelRegistry::Global().Register(def);
  }
  return true;
}

}  // namespace lockstep
