#include "inference/onnx_registry.h"

#include "core/logging.h"

namespace lockstep::inference {

OnnxTranslation WriteAs(std::string op_type) {
  return [op_type = std::move(op_type)](OnnxWriter& w, const Node& node) {
    w.AddNode(node, op_type, w.InputNames(node), node.output());
    return absl::OkStatus();
  };
}

OnnxRegistry& OnnxRegistry::Global() {
  static OnnxRegistry* registry = new OnnxRegistry();
  return *registry;
}

bool OnnxRegistry::Register(const std::string& op, OnnxTranslation translation) {
  LS_CHECK(translations_.count(op) == 0) << "ONNX translation of " << op << " registered twice";
  translations_.emplace(op, std::move(translation));
  return true;
}

const OnnxTranslation* OnnxRegistry::Find(absl::string_view op) const {
  auto it = translations_.find(op);
  return it == translations_.end() ? nullptr : &it->second;
}

}  // namespace lockstep::inference
