#pragma once

// The IR: a Graph owns Nodes in execution (topological) order; every Value has exactly one
// producer (SSA). Graph inputs are "Input" nodes whose role says whether they are fed each step
// (data), trained (parameter) or carried across steps (state).

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/layout.h"
#include "graph/attr.h"
#include "graph/op_def.h"

namespace lockstep {

class Kernel;

// Where the memory plan put a value.
enum class Region : uint8_t { kNone, kArena, kInputs, kParameters, kGradients, kState };
const char* RegionName(Region region);

struct Allocation {
  Region region = Region::kNone;
  size_t offset = 0;  // bytes from the start of the region
};

struct Value {
  int id = 0;
  TensorType type;
  Node* producer = nullptr;
  int index = 0;  // which output of the producer
  Layout layout = Layout::kPlain;
  Allocation alloc;

  const Shape& shape() const { return type.shape; }
  DType dtype() const { return type.dtype; }
  size_t bytes() const { return LayoutBytes(layout, type.shape, type.dtype); }
  std::string Label() const;  // "%12"
};

enum class InputRole { kData, kParameter, kState };
const char* InputRoleName(InputRole role);

struct Node {
  Node();
  ~Node();
  int id = 0;
  const OpDef* op = nullptr;
  std::string name;
  Attrs attrs;
  std::vector<Value*> inputs;
  std::vector<std::unique_ptr<Value>> outputs;
  std::unique_ptr<Kernel> kernel;  // bound by LowerKernels
  // Set by AssignLayouts on the reorders it inserts: they depend on the host's backend.
  bool converts_layout = false;

  Value* output(int i = 0) const { return outputs[i].get(); }
  bool IsInput() const;
  InputRole role() const;  // only for Input nodes
  // "Conv2D node 'layer1/conv_3' (#3)"
  std::string Describe() const;
};

enum class OutputKind { kResult, kGradient, kUpdate };
const char* OutputKindName(OutputKind kind);

// A value the graph keeps alive: a result the caller reads (loss, logits), a parameter's
// gradient (lives in the flat gradient buffer), or a state update (side effect).
struct GraphOutput {
  std::string name;
  Value* value = nullptr;
  OutputKind kind = OutputKind::kResult;
  // For kGradient: the parameter Input node the gradient belongs to. Passes follow this link;
  // the name is only for users and files.
  const Node* parameter = nullptr;
};

// Name of the graph output holding an input's gradient: "grad/<input>".
std::string GradientName(absl::string_view input);

// Bytes of each region, filled in by MemoryPlan.
struct MemoryPlanSizes {
  size_t arena = 0;
  size_t inputs = 0;
  size_t parameters = 0;
  size_t gradients = 0;
  size_t state = 0;
  size_t workspace = 0;  // filled in by LowerKernels: the largest kernel scratch
  // Every offset is a multiple of it: the alignment of the device's backend.
  size_t alignment = 0;
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Appends a node (or inserts it before position `before`) with outputs of the given types.
  Node* AddNode(const OpDef* op, std::string name, Attrs attrs, std::vector<Value*> inputs,
                const std::vector<TensorType>& output_types);
  Node* InsertNode(size_t before, const OpDef* op, std::string name, Attrs attrs,
                   std::vector<Value*> inputs, const std::vector<TensorType>& output_types);
  void RemoveNodes(const std::function<bool(const Node&)>& remove);
  // Points every reader of a key (node inputs and graph outputs) at its mapped value instead.
  void ReplaceUses(const std::map<const Value*, Value*>& replacement);
  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  size_t PositionOf(const Node* node) const;

  void AddOutput(std::string name, Value* value, OutputKind kind);
  // Adds the kGradient output GradientName(parameter) linked to the parameter node.
  void AddGradientOutput(const Node* parameter, Value* gradient);
  std::vector<GraphOutput>& outputs() { return outputs_; }
  const std::vector<GraphOutput>& outputs() const { return outputs_; }
  const GraphOutput* FindOutput(absl::string_view name) const;
  // The kGradient output linked to `parameter`, or null.
  const GraphOutput* FindGradientOutput(const Node* parameter) const;

  std::vector<Node*> InputNodes(InputRole role) const;
  Node* FindInput(absl::string_view name) const;

  // Readers of each value, by value id (rebuilt on each call; passes call it once).
  std::vector<std::vector<Node*>> Consumers() const;
  int value_count() const { return next_value_id_; }
  int next_node_id() const { return next_node_id_; }

  MemoryPlanSizes& plan() { return plan_; }
  const MemoryPlanSizes& plan() const { return plan_; }

 private:
  std::unique_ptr<Node> MakeNode(const OpDef* op, std::string name, Attrs attrs,
                                 std::vector<Value*> inputs,
                                 const std::vector<TensorType>& output_types);

  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<GraphOutput> outputs_;
  MemoryPlanSizes plan_;
  int next_node_id_ = 0;
  int next_value_id_ = 0;
};

// The value whose memory `value` shares by way of in-place outputs (itself when none).
Value* InPlaceRoot(Value* value);

// Checks SSA order, arity, attribute declarations, in-place rules and that each gradient output
// is linked to its own parameter of the same type; names the node or output at fault.
absl::Status VerifyGraph(const Graph& graph);
// One line per node, the layout by its registered name:
// "%5 = Conv2D(%1, %2) {groups=1, ...} : f32[8, 64, 56, 56] plain @arena+0".
std::string DumpGraph(const Graph& graph);

}  // namespace lockstep
