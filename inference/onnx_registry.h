#pragma once

// How each op of an inference graph is written as ONNX: a translation registered by op name in
// the op family's file, inference/onnx_<family>.cc, so that ops/ does not depend on ONNX and
// the exporter keeps no list of ops.
//
//   absl::Status WriteFlatten(OnnxWriter& w, const Node& node) {
//     SetInt(w.AddNode(node, "Flatten", w.InputNames(node), node.output()), "axis", 1);
//     return absl::OkStatus();
//   }
//   REGISTER_ONNX("Flatten", WriteFlatten);

#include <functional>
#include <map>
#include <string>

#include "absl/strings/string_view.h"
#include "graph/op_registry.h"  // LS_REGISTRY_CONCAT
#include "inference/onnx_writer.h"

namespace lockstep::inference {

// Adds the ONNX node(s) for `node`; fails naming the node where ONNX cannot express it.
using OnnxTranslation = std::function<absl::Status(OnnxWriter& w, const Node& node)>;

// The node as ONNX op `op_type` with the node's inputs and no attributes.
OnnxTranslation WriteAs(std::string op_type);

class OnnxRegistry {
 public:
  static OnnxRegistry& Global();
  // Ops are unique.
  bool Register(const std::string& op, OnnxTranslation translation);
  // Null when the op has no ONNX form.
  const OnnxTranslation* Find(absl::string_view op) const;

 private:
  std::map<std::string, OnnxTranslation, std::less<>> translations_;
};

}  // namespace lockstep::inference

// The registrations are static initialisers: lockstep_inference is an OBJECT library, so that
// the linker keeps them.
#define REGISTER_ONNX(op, translation)                                        \
  [[maybe_unused]] static const bool LS_REGISTRY_CONCAT(ls_onnx_, __LINE__) = \
      ::lockstep::inference::OnnxRegistry::Global().Register(op, translation)
