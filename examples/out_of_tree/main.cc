// A training program of one's own against the installed Lockstep (see CMakeLists.txt beside it):
// a small network, one epoch on the built-in sample data set, a checkpoint at the end of it.
// Alone it is a world of one; under mpirun each rank trains on its shard.
//
//   my-training OUT    writes the sample data to OUT/data and the checkpoints to OUT/ckpt

#include <iostream>
#include <memory>
#include <string>

#include "dataset/image_folder.h"
#include "dataset/sample_dataset.h"
#include "examples/env_options.h"
#include "parallel/context.h"
#include "train/checkpoint_callback.h"
#include "train/dataset_source.h"
#include "train/layers.h"
#include "train/model.h"

namespace dataset = lockstep::dataset;
namespace parallel = lockstep::parallel;
namespace train = lockstep::train;

// (N, 3, 32, 32) images -> (N, classes) logits.
train::LayerPtr SmallNet(int64_t classes) {
  auto net = std::make_shared<train::Sequential>();
  net->Add("conv1", std::make_shared<train::Conv2d>(3, 16, 3, train::Conv2dOptions{.padding = 1}))
      .Add("bn1", std::make_shared<train::BatchNorm2d>(16))
      .Add("relu1", std::make_shared<train::ReLU>())
      .Add("pool1", std::make_shared<train::MaxPool2d>(2, 2))
      .Add("conv2", std::make_shared<train::Conv2d>(16, 32, 3, train::Conv2dOptions{.padding = 1}))
      .Add("bn2", std::make_shared<train::BatchNorm2d>(32))
      .Add("relu2", std::make_shared<train::ReLU>())
      .Add("pool2", std::make_shared<train::GlobalAvgPool>())
      .Add("flatten", std::make_shared<train::Flatten>())
      .Add("fc", std::make_shared<train::Dense>(32, classes));
  return net;
}

absl::Status Run(const std::string& out, const parallel::Context& ctx,
                 const lockstep::EnvOptions& env) {
  if (ctx.rank() == 0) {  // ten classes of 40x40 JPEGs, 16 of each to train on
    LS_RETURN_IF_ERROR(dataset::WriteSampleDataset(
        out + "/data", {.train_per_class = 16, .val_per_class = 0, .height = 40, .width = 40}));
  }
  LS_RETURN_IF_ERROR(ctx.HostWorld()->Barrier());
  LS_ASSIGN_OR_RETURN(dataset::Dataset images,
                      dataset::ImageFolder(out + "/data/train",
                                           {.num_shards = ctx.size(), .shard_id = ctx.rank()}));
  const int64_t batch = 8;  // per rank
  train::DatasetSource data(images.Map(train::ClassificationTransforms(32, /*training=*/true))
                                .Batch(batch, /*drop_remainder=*/true));

  train::ModelOptions options{
      .batch_size = batch, .image_shape = {3, 32, 32}, .context = ctx, .dump_dir = env.dump_dir};
  options.config.Set(env.math);
  if (ctx.size() > 1) options.parallel.mode = parallel::ParallelMode::kDataParallel;
  options.parallel.overlap_communication = env.overlap_communication;
  train::Model model(SmallNet(dataset::SampleClassNames().size()), train::SoftmaxCrossEntropy(),
                     train::Momentum{.lr = 0.05}, options);
  train::Callbacks callbacks = {std::make_shared<train::ModelCheckpoint>(
      lockstep::ckpt::CheckpointConfig{
          .save_checkpoint_steps = 0, .save_checkpoint_epochs = 1, .directory = out + "/ckpt"},
      "small_net")};
  if (ctx.rank() == 0) callbacks.push_back(std::make_shared<train::LossMonitor>(5));
  return model.Train(/*epochs=*/1, data, callbacks);
}

int main(int argc, char** argv) {
  // The environment as the Lockstep binaries read it: whether mpirun started the process, the
  // collective timeout and the other LOCKSTEP_* settings.
  absl::StatusOr<lockstep::StartedRank> started = lockstep::StartRank(&argc, &argv);
  if (!started.ok()) return parallel::ReportFatal(started.status());
  const parallel::Context& ctx = started->context;
  const lockstep::EnvOptions& env = started->env;
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " OUT\n";
    return 2;
  }
  absl::Status status = Run(argv[1], ctx, env);
  if (!status.ok()) return parallel::ReportFatal(status);
  return 0;
}
