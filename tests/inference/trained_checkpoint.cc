#include "trained_checkpoint.h"

#include <filesystem>

#include "ckpt/naming.h"
#include "dataset/image_folder.h"
#include "dataset/sample_dataset.h"
#include "train/checkpoint_callback.h"
#include "train/dataset_source.h"
#include "train/model.h"
#include "train/models.h"

namespace lockstep::inference {

absl::StatusOr<TrainedCheckpoint> TrainAndSave(const std::string& model_name, int64_t image_size,
                                               const std::string& dir) {
  constexpr int64_t kBatch = 8;
  TrainedCheckpoint out{.ckpt = "", .meta = "", .data = dir + "/data"};
  if (!std::filesystem::exists(out.data + "/val")) {
    // 160 training images (20 steps of 8 an epoch), 20 validation images.
    LS_RETURN_IF_ERROR(dataset::WriteSampleDataset(
        out.data, {.train_per_class = 16, .val_per_class = 2, .height = 48, .width = 48}));
  }
  LS_ASSIGN_OR_RETURN(dataset::Dataset train, dataset::ImageFolder(out.data + "/train", {}));
  LS_ASSIGN_OR_RETURN(dataset::Dataset val,
                      dataset::ImageFolder(out.data + "/val", {.shuffle = false}));
  const int64_t classes = static_cast<int64_t>(train.class_names().size());
  LS_ASSIGN_OR_RETURN(train::LayerPtr net, train::models::ModelByName(model_name, classes));
  train::Model model(net, train::SoftmaxCrossEntropy(), train::Momentum{.lr = 0.05},
                     {.batch_size = kBatch, .image_shape = {3, image_size, image_size}});
  train::DatasetSource source(
      train.Map(train::ClassificationTransforms(image_size, true)).Batch(kBatch, true));
  const std::string ckpt_dir = dir + "/" + model_name;
  auto saver = std::make_shared<train::ModelCheckpoint>(
      ckpt::CheckpointConfig{
          .save_checkpoint_steps = 0, .save_checkpoint_epochs = 1, .directory = ckpt_dir},
      model_name);
  // Two epochs: enough steps for the running statistics (momentum 0.9) to leave their initial
  // values, so that evaluation gives logits of a sane size.
  LS_RETURN_IF_ERROR(model.Train(2, source, {saver}));
  out.ckpt = ckpt_dir + "/" + ckpt::CheckpointFileName(model_name, 0, 2, model.global_step() / 2);
  out.meta = ckpt_dir + "/" + ckpt::GraphMetaFileName(model_name, 0);

  const int64_t n = val.SamplesPerEpoch();
  train::DatasetSource val_source(
      val.Map(train::ClassificationTransforms(image_size, false)).Batch(n));
  LS_RETURN_IF_ERROR(val_source.Reset(0));
  train::Batch batch;
  LS_ASSIGN_OR_RETURN(bool more, val_source.Next(&batch));
  if (!more) return absl::InternalError("no validation batch");
  LS_ASSIGN_OR_RETURN(train::BatchResult result, model.EvalBatch(batch));
  out.images = batch.images;
  out.logits = result.logits;
  return out;
}

}  // namespace lockstep::inference
