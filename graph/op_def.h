#pragma once

// One op, one place: arity, attributes, shape/dtype inference and the gradient rule are declared
// together with REGISTER_OP in ops/<family>.cc.

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "graph/amp.h"
#include "graph/attr.h"

namespace lockstep {

class Builder;
struct Node;
struct Value;

struct TensorType {
  Shape shape;
  DType dtype = DType::kF32;
  bool operator==(const TensorType&) const = default;
};
std::string TypeToString(const TensorType& type);  // "f32[8, 3, 32, 32]"

struct InferContext {
  const std::vector<TensorType>& inputs;
  const Attrs& attrs;
};
using InferFn = std::function<absl::StatusOr<std::vector<TensorType>>(const InferContext&)>;

// What a gradient rule sees: the forward node and the gradients flowing into its outputs.
struct GradContext {
  Builder& builder;
  const Node& node;
  std::vector<Value*> output_grads;  // nullptr where an output does not reach the loss

  Value* input(int i) const;
  Value* output(int i) const;
  Value* dy(int i = 0) const { return output_grads[i]; }
  const Attrs& attrs() const;
};
// Returns one gradient per input (nullptr: the input gets no gradient, e.g. integer labels).
using GradFn = std::function<std::vector<Value*>(GradContext&)>;

inline constexpr int kVariadic = -1;

// How a training op is written in an inference graph (inference/derive.cc): the plain ops it
// stands for, applied in turn (the first reads the node's inputs and takes its attributes but
// `training_only_attrs`, each next one reads the previous one's output), or, with no ops, the
// node passes its first input on (layout reorders, Identity).
struct InferenceForm {
  std::vector<std::string> ops;
  std::vector<std::string> training_only_attrs;
};

// How the AutoMixedPrecision pass treats an op (graph/amp.h, MindSpore's amp levels). An op
// that declares nothing runs in float32 at every level: its floating inputs are cast to float32.
struct PrecisionPolicy {
  // An input kept in float32 at levels below `until` (unset: at every level) while the op
  // computes in the low dtype.
  struct Float32Input {
    int input = 0;
    std::optional<AmpLevel> until;
  };
  // The first level at which the op computes in the low dtype; unset: never.
  std::optional<AmpLevel> low_from;
  std::vector<Float32Input> float32_inputs;
  // The op has no dtype of its own (reshapes, copies, Cast): it runs in its input's dtype and
  // the pass puts no Cast before it.
  bool follows_input = false;

  bool LowAt(AmpLevel level) const;
  // Whether input `input` of an op computing in the low dtype stays float32 at `level`.
  bool KeepsFloat32(int input, AmpLevel level) const;
};

struct AttrSpec {
  std::string name;
  bool required = true;
  AttrValue default_value;  // when not required
};

class OpDef {
 public:
  explicit OpDef(std::string name) : name_(std::move(name)) {}

  OpDef& Inputs(int count) { return Set(num_inputs_, count); }
  // kVariadic: the inference function decides how many.
  OpDef& Outputs(int count) { return Set(num_outputs_, count); }
  // A required attribute, or one with a default.
  OpDef& Attr(std::string name) { return AddAttr({std::move(name), true, {}}); }
  OpDef& Attr(std::string name, AttrValue default_value) {
    return AddAttr({std::move(name), false, std::move(default_value)});
  }
  OpDef& Infer(InferFn fn) { return Set(infer_, std::move(fn)); }
  OpDef& Grad(GradFn fn) { return Set(grad_, std::move(fn)); }
  // Output `output` is written into the memory of input `input` (optimizer and running-stat
  // updates). The input must be a parameter or state, and every other reader runs before.
  OpDef& InPlace(int output, int input) {
    in_place_.emplace_back(output, input);
    return *this;
  }
  // Every output i is written into input i (variadic collectives on gradients).
  OpDef& InPlaceEach() { return Set(in_place_each_, true); }
  // The InPlace pairs repeat for each further group of `outputs` outputs and `inputs` inputs
  // (an op that updates several tensors alike: output outputs * k + o is written into input
  // inputs * k + i for each pair (o, i)).
  OpDef& InPlaceRepeats(int outputs, int inputs) {
    return Set(in_place_period_, std::make_pair(outputs, inputs));
  }
  // The op's inference form (see InferenceForm). An op without one does not export.
  OpDef& InferenceAs(std::vector<std::string> ops,
                     std::vector<std::string> training_only_attrs = {}) {
    return Set(inference_, std::optional<InferenceForm>(
                               InferenceForm{std::move(ops), std::move(training_only_attrs)}));
  }
  // The op is its own inference form.
  OpDef& InferenceAsItself() { return InferenceAs({name_}); }
  // At inference the node passes its first input on.
  OpDef& InferencePassesInput() { return InferenceAs({}); }
  // Autodiff sums the gradients that several readers give one value with this op (one op does).
  OpDef& SumsGradients() { return Set(sums_gradients_, true); }

  // Mixed precision (PrecisionPolicy): the op computes in the low dtype from amp level `level`
  // on, e.g. LowPrecisionFrom(AmpLevel::kO1) for convolutions.
  OpDef& LowPrecisionFrom(AmpLevel level) {
    return Set(precision_.low_from, std::optional<AmpLevel>(level));
  }
  // ... but these inputs stay float32 at levels below `until` (unset: at every level), e.g. a
  // batch norm's scale and bias below O3 and its running statistics always.
  OpDef& Float32Inputs(const std::vector<int>& inputs,
                       std::optional<AmpLevel> until = std::nullopt) {
    for (int input : inputs) precision_.float32_inputs.push_back({input, until});
    return *this;
  }
  // The op runs in its input's dtype, whatever the level.
  OpDef& FollowsInputPrecision() { return Set(precision_.follows_input, true); }

  const std::string& name() const { return name_; }
  int num_inputs() const { return num_inputs_; }
  int num_outputs() const { return num_outputs_; }
  const std::vector<AttrSpec>& attrs() const { return attrs_; }
  const InferFn& infer() const { return infer_; }
  const GradFn& grad() const { return grad_; }
  bool differentiable() const { return static_cast<bool>(grad_); }
  const std::optional<InferenceForm>& inference_form() const { return inference_; }
  bool sums_gradients() const { return sums_gradients_; }
  const PrecisionPolicy& precision() const { return precision_; }
  // The input an output is written into, or -1.
  int InPlaceInput(int output) const;

  // Checks attribute names against the declaration and fills defaults.
  absl::Status CompleteAttrs(Attrs* attrs) const;

 private:
  template <typename T>
  OpDef& Set(T& field, T value) {
    field = std::move(value);
    return *this;
  }
  OpDef& AddAttr(AttrSpec spec) {
    attrs_.push_back(std::move(spec));
    return *this;
  }

  std::string name_;
  int num_inputs_ = 0;
  int num_outputs_ = 1;
  std::vector<AttrSpec> attrs_;
  InferFn infer_;
  GradFn grad_;
  std::vector<std::pair<int, int>> in_place_;
  bool in_place_each_ = false;
  std::pair<int, int> in_place_period_{0, 0};  // (outputs, inputs); 0: no repetition
  std::optional<InferenceForm> inference_;
  bool sums_gradients_ = false;
  PrecisionPolicy precision_;
};

}  // namespace lockstep
