// A data-parallel job in which the last rank sleeps inside its third training step, in the kernel
// of a node 'stall' that reads the images. The other ranks wait for it in a gradient AllReduce,
// give up after LOCKSTEP_COLLECTIVE_TIMEOUT_S and report, one line per rank, the collective and
// node each rank is at, naming the last rank as not arrived (its watchdog thread answers for it
// while it sleeps); then MPI_Abort ends every process, the sleeping one too.

#include <chrono>
#include <cstring>
#include <thread>

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

// Copies its input; on the last rank, its kStallStep-th run sleeps far past the timeout.
class StallKernel : public Kernel {
 public:
  explicit StallKernel(const Node&) {}
  absl::Status Run(const KernelIO& io) override {
    const parallel::Context& ctx = parallel::CurrentContext();
    if (++runs_ == kStallStep && ctx.rank() == ctx.size() - 1) {
      std::this_thread::sleep_for(std::chrono::minutes(5));
    }
    std::memcpy(io.outputs[0].raw_data(), io.inputs[0].raw_data(), io.inputs[0].nbytes());
    return absl::OkStatus();
  }

 private:
  int runs_ = 0;
};
REGISTER_KERNEL({.op = "StallOnLastRank", .create = MakeFactory<StallKernel>()});

class Stall : public train::Layer {
 public:
  Value* Build(const train::NetContext& ctx, Value* x) const override {
    return ctx.Op1("StallOnLastRank", {x});
  }
};

[[noreturn]] void Run(int argc, char** argv) {
  parallel::Context& ctx = parallel::Init(&argc, &argv);
  auto net = std::make_shared<train::Sequential>();
  net->Add("stall", std::make_shared<Stall>())
      .Add("conv", std::make_shared<train::Conv2d>(3, 8, 3))
      .Add("relu", std::make_shared<train::ReLU>())
      .Add("flatten", std::make_shared<train::Flatten>())
      .Add("fc", std::make_shared<train::Dense>(0, train::testing::kShapeClasses));
  train::Model model(net, train::SoftmaxCrossEntropy(), train::Momentum{.lr = 0.1},
                     {.batch_size = 4,
                      .image_shape = {3, 8, 8},
                      .parallel = {.mode = parallel::ParallelMode::kDataParallel}});
  train::testing::ShapeImages shapes = train::testing::MakeShapeImages(40, 3, 8, ctx.rank());
  auto data = train::InMemoryDataSource::Create(shapes.images, shapes.labels, {.batch_size = 4});
  absl::Status status = data.ok() ? model.Train(1, **data) : data.status();
  parallel::Abort(status.ok() ? absl::InternalError("training finished without the last rank")
                              : status);
}

}  // namespace
}  // namespace lockstep

int main(int argc, char** argv) { lockstep::Run(argc, argv); }
