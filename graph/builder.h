#pragma once

// The API model code and gradient rules use to add nodes. Errors are sticky: the first failure
// (unknown op, bad attributes, a shape that does not fit) is kept in status(), later calls
// return nullptr, and whoever finishes the graph checks status() once.

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "graph/graph.h"

namespace lockstep {

class Builder {
 public:
  explicit Builder(Graph* graph) : graph_(graph) {}

  Value* Input(const std::string& name, Shape shape, DType dtype = DType::kF32);
  Value* Parameter(const std::string& name, Shape shape, DType dtype = DType::kF32);
  Value* State(const std::string& name, Shape shape, DType dtype = DType::kF32);

  // Adds a node; returns its outputs (nullptrs after an error).
  std::vector<Value*> Op(absl::string_view op, std::vector<Value*> inputs, Attrs attrs = {});
  // Adds a single-output node.
  Value* Op1(absl::string_view op, std::vector<Value*> inputs, Attrs attrs = {});

  // Nodes added from now on are named "<prefix><Op>_<id>".
  void SetNamePrefix(std::string prefix) { prefix_ = std::move(prefix); }
  // Nodes added from now on go right before `node` (at the end when null), as passes that
  // rewrite a graph in place need.
  void SetInsertBefore(const Node* node) { insert_before_ = node; }

  const absl::Status& status() const { return status_; }
  // Fails the graph with an error found outside the builder, by a front end tracing its own
  // code; it replaces an op's error, which the front end's message words again with the line of
  // its code that added the op.
  void Fail(absl::Status error) { status_ = std::move(error); }
  Graph* graph() const { return graph_; }

 private:
  Value* AddInput(const std::string& name, Shape shape, DType dtype, InputRole role);
  absl::StatusOr<Node*> AddNode(absl::string_view op, std::vector<Value*> inputs, Attrs attrs);

  Graph* graph_;
  std::string prefix_;
  const Node* insert_before_ = nullptr;
  absl::Status status_;
};

}  // namespace lockstep
