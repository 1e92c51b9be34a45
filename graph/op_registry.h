#pragma once

#include <map>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "graph/op_def.h"

namespace lockstep {

class OpRegistry {
 public:
  static OpRegistry& Global();

  // Registers a new op (names are unique) and returns it for the fluent declarations.
  OpDef& Register(const std::string& name);
  // Unknown names fail with the list of known ones.
  absl::StatusOr<const OpDef*> Find(absl::string_view name) const;
  std::vector<std::string> Names() const;
  // The op that declared SumsGradients(); an error unless exactly one did.
  absl::StatusOr<const OpDef*> GradientSum() const;
  // The op of graph inputs (graph/input_op.cc).
  const OpDef& InputOp() const { return *input_op_; }

 private:
  std::map<std::string, std::unique_ptr<OpDef>, std::less<>> ops_;
  const OpDef* input_op_ = nullptr;
};

}  // namespace lockstep

#define LS_REGISTRY_CONCAT_INNER(a, b) a##b
#define LS_REGISTRY_CONCAT(a, b) LS_REGISTRY_CONCAT_INNER(a, b)

// REGISTER_OP("Relu").Inputs(1).Outputs(1).Infer(...).Grad(...);
#define REGISTER_OP(name)                                                               \
  [[maybe_unused]] static ::lockstep::OpDef& LS_REGISTRY_CONCAT(ls_op_def_, __LINE__) = \
      ::lockstep::OpRegistry::Global().Register(name)
