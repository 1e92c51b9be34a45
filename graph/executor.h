#pragma once

// Runs a compiled graph step after step. Memory is allocated once, when the executor is
// created, following the graph's memory plan; a step allocates nothing.

#include <memory>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/status.h"
#include "core/tensor.h"
#include "graph/graph.h"
#include "graph/kernel.h"

namespace lockstep {

class Executor {
 public:
  // The graph must have been through MemoryPlan and LowerKernels.
  static absl::StatusOr<std::unique_ptr<Executor>> Create(std::unique_ptr<Graph> graph);

  absl::Status Run();

  // Views into the executor's memory: write inputs, parameters and state before Run, read
  // outputs (results, gradients, updates) after it.
  absl::StatusOr<Tensor> Input(absl::string_view name) const;
  absl::StatusOr<Tensor> Output(absl::string_view name) const;
  // The flat buffers: every parameter (and its gradient) is a view into these.
  const Tensor& parameters() const { return regions_[Index(Region::kParameters)]; }
  const Tensor& gradients() const { return regions_[Index(Region::kGradients)]; }
  const Tensor& state() const { return regions_[Index(Region::kState)]; }
  const Graph& graph() const { return *graph_; }

 private:
  static constexpr size_t Index(Region region) { return static_cast<size_t>(region); }
  explicit Executor(std::unique_ptr<Graph> graph) : graph_(std::move(graph)) {}
  Tensor ViewOf(const Value& value) const;

  struct Step {
    Node* node;
    KernelIO io;
  };
  std::unique_ptr<Graph> graph_;
  std::vector<Tensor> regions_;  // indexed by Region
  Tensor workspace_;
  std::vector<Step> steps_;
};

}  // namespace lockstep
