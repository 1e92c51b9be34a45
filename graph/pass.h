#pragma once

// Passes are small named units, one per file under graph/passes/ (or parallel/passes/). They get
// their configuration through the PassContext, never from globals. The PassManager verifies
// the graph after every pass and, when a dump directory is set, writes the graph as text.

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/device.h"
#include "core/layout.h"
#include "core/status.h"
#include "graph/graph.h"
#include "graph/pass_config.h"

namespace lockstep {

struct AutodiffOptions {
  // The scalar graph output to differentiate, seeded with loss_scale.
  std::string loss = "loss";
  double loss_scale = 1.0;
  // Instead of the loss: (graph output, data input holding its incoming gradient) pairs.
  std::vector<std::pair<std::string, std::string>> seeds;
  // Inputs to differentiate with respect to; empty means every parameter. Gradients become
  // graph outputs named "grad/<input>".
  std::vector<std::string> wrt;
};

struct PassContext {
  Device device = Device::CPU();
  // The layouts values every rank must hold alike may take (graph/kernel.h SharedLayouts); unset:
  // all the device's backend offers (a world of one, or ranks that agreed on everything).
  std::optional<std::vector<Layout>> shared_layouts;
  AutodiffOptions autodiff;
  // The options of the other passes and of the kernels, by type (graph/pass_config.h).
  PassConfig config;
  // Set: the PassManager writes the graph there as text before and after every pass.
  std::string dump_dir;
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual absl::string_view name() const = 0;
  virtual absl::Status Run(Graph& graph, PassContext& ctx) = 0;
};

class PassManager {
 public:
  PassManager& Add(std::unique_ptr<Pass> pass) {
    passes_.push_back(std::move(pass));
    return *this;
  }
  absl::Status Run(Graph& graph, PassContext& ctx) const;

 private:
  std::vector<std::unique_ptr<Pass>> passes_;
};

}  // namespace lockstep
