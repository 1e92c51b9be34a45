// A data-parallel job in which the last rank sleeps inside its third training step, in the kernel
// of a node 'stall' that reads the images. The other ranks wait for it in a gradient AllReduce,
// give up after LOCKSTEP_COLLECTIVE_TIMEOUT_S and report, one line per rank, the collective and
// node each rank is at, naming the last rank as not arrived (its watchdog thread answers for it
// while it sleeps); then MPI_Abort ends every process, the sleeping one too.

#include <chrono>
#include <cstring>
#include <thread>

#include "examples/env_options.h"
#include "graph/kernel.h"
#include "graph/op_registry.h"
#include "parallel/context.h"
#include "tests/train/shapes_data.h"
#include "train/layers.h"
#include "train/model.h"

namespace lockstep {
namespace {

constexpr int kStallStep = 3;

REGISTER_OP("StallOnLastRank").Inputs(1).Infer([](const InferContext& ctx) {
  return absl::StatusOr<std::vector<TensorType>>(std::vector<TensorType>{ctx.inputs[0]});
});

// Which rank stalls: the compile options carry it to the kernel.
struct StallOptions {
  bool stall = false;
};

// Copies its input; where it stalls, its kStallStep-th run sleeps far past the timeout.
class StallKernel : public Kernel {
 public:
  explicit StallKernel(bool stall) : stall_(stall) {}
  absl::Status Run(const KernelIO& io) override {
    if (++runs_ == kStallStep && stall_) std::this_thread::sleep_for(std::chrono::minutes(5));
    std::memcpy(io.outputs[0].raw_data(), io.inputs[0].raw_data(), io.inputs[0].nbytes());
    return absl::OkStatus();
  }

 private:
  bool stall_;
  int runs_ = 0;
};
REGISTER_KERNEL({.op = "StallOnLastRank",
                 .create = [](const Node&,
                              const KernelContext& ctx) -> absl::StatusOr<std::unique_ptr<Kernel>> {
                   LS_ASSIGN_OR_RETURN(const StallOptions* options,
                                       ctx.config.Require<StallOptions>("StallOnLastRank"));
                   return std::make_unique<StallKernel>(options->stall);
                 }});

class Stall : public train::Layer {
 public:
  Value* Build(const train::NetContext& ctx, Value* x) const override {
    return ctx.Op1("StallOnLastRank", {x});
  }
};

int Run(int argc, char** argv) {
  absl::StatusOr<StartedRank> started = StartRank(&argc, &argv);
  if (!started.ok()) return parallel::ReportFatal(started.status());
  const parallel::Context& ctx = started->context;
  const EnvOptions& env = started->env;
  auto net = std::make_shared<train::Sequential>();
  net->Add("stall", std::make_shared<Stall>())
      .Add("conv", std::make_shared<train::Conv2d>(3, 8, 3))
      .Add("relu", std::make_shared<train::ReLU>())
      .Add("flatten", std::make_shared<train::Flatten>())
      .Add("fc", std::make_shared<train::Dense>(0, train::testing::kShapeClasses));
  train::ModelOptions options{.batch_size = 4,
                              .image_shape = {3, 8, 8},
                              .parallel = {.mode = parallel::ParallelMode::kDataParallel,
                                           .overlap_communication = env.overlap_communication},
                              .context = ctx,
                              .dump_dir = env.dump_dir};
  options.config.Set(StallOptions{.stall = ctx.rank() == ctx.size() - 1});
  train::Model model(net, train::SoftmaxCrossEntropy(), train::Momentum{.lr = 0.1}, options);
  train::testing::ShapeImages shapes = train::testing::MakeShapeImages(40, 3, 8, ctx.rank());
  auto data = train::InMemoryDataSource::Create(shapes.images, shapes.labels, {.batch_size = 4});
  absl::Status status = data.ok() ? model.Train(1, **data) : data.status();
  return parallel::ReportFatal(
      status.ok() ? absl::InternalError("training finished without the last rank") : status);
}

}  // namespace
}  // namespace lockstep

int main(int argc, char** argv) { return lockstep::Run(argc, argv); }
