#include "graph/executor.h"

#include <cstring>

namespace lockstep {

absl::StatusOr<std::unique_ptr<Executor>> Executor::Create(std::unique_ptr<Graph> graph) {
  std::unique_ptr<Executor> executor(new Executor(std::move(graph)));
  const MemoryPlanSizes& sizes = executor->graph_->plan();
  executor->regions_.resize(Index(Region::kState) + 1);
  auto allocate = [&](Region region, size_t bytes) {
    Tensor buffer = Tensor::Zeros({static_cast<int64_t>(bytes)}, DType::kU8);
    executor->regions_[Index(region)] = buffer;
  };
  allocate(Region::kArena, sizes.arena);
  allocate(Region::kInputs, sizes.inputs);
  allocate(Region::kParameters, sizes.parameters);
  allocate(Region::kGradients, sizes.gradients);
  allocate(Region::kState, sizes.state);
  executor->workspace_ = Tensor::Empty({static_cast<int64_t>(sizes.workspace)}, DType::kU8);

  for (const auto& node : executor->graph_->nodes()) {
    if (node->IsInput()) continue;
    if (node->kernel == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat(node->Describe(), " has no kernel: run LowerKernels before Executor"));
    }
    Step step{node.get(), {}};
    for (const Value* input : node->inputs) step.io.inputs.push_back(executor->ViewOf(*input));
    for (const auto& output : node->outputs) step.io.outputs.push_back(executor->ViewOf(*output));
    step.io.workspace = executor->workspace_.raw_data();
    executor->steps_.push_back(std::move(step));
  }
  return executor;
}

Tensor Executor::ViewOf(const Value& value) const {
  LS_CHECK(value.alloc.region != Region::kNone) << value.Label() << " was not planned";
  return regions_[Index(value.alloc.region)].View(value.alloc.offset, value.shape(), value.dtype());
}

absl::Status Executor::Run() {
  for (Step& step : steps_) {
    absl::Status status = step.node->kernel->Run(step.io);
    if (!status.ok()) return Annotate(status, step.node->Describe());
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> Executor::Input(absl::string_view name) const {
  const Node* node = graph_->FindInput(name);
  if (node == nullptr) return absl::NotFoundError(absl::StrCat("graph has no input '", name, "'"));
  return ViewOf(*node->output());
}

absl::StatusOr<Tensor> Executor::Output(absl::string_view name) const {
  const GraphOutput* output = graph_->FindOutput(name);
  if (output == nullptr) {
    return absl::NotFoundError(absl::StrCat("graph has no output '", name, "'"));
  }
  return ViewOf(*output->value);
}

}  // namespace lockstep
