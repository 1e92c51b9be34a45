#pragma once

// The ImageFolder (or MNIST) pipeline behind Model::Train and Model::Eval: a batched
// dataset::Dataset read one epoch per Reset.
//
//   LS_ASSIGN_OR_RETURN(dataset::Dataset train, dataset::ImageFolder(dir, {.shuffle = true}));
//   DatasetSource source(train.Map({...}).Batch(32, /*drop_remainder=*/true));
//   LS_RETURN_IF_ERROR(model.Train(10, source));

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "dataset/dataset.h"
#include "train/data.h"

namespace lockstep::train {

// A data set batched with drop_remainder (training) gives every epoch exactly BatchesPerEpoch()
// full batches, on every rank alike, which data parallelism needs: every step is a collective,
// and a rank one step short would meet the others' gradient AllReduce with its next collective.
// Where skipped bad image files leave a rank's epoch short, its last batch repeats (as PyTorch's
// DistributedSampler pads a short shard by repeating samples), and a warning says so. Without
// drop_remainder (evaluation) the epoch ends with its last sample: each image is scored once.
class DatasetSource : public DataSource {
 public:
  // `dataset` must end in (N, C, H, W) float32 images (HWC2CHW), or in (N, H, W, C) uint8 ones
  // for a model that normalizes on its device (ModelOptions::normalize_images), and must not
  // Repeat: each Reset runs one epoch.
  explicit DatasetSource(dataset::Dataset dataset) : dataset_(std::move(dataset)) {}

  // Starts the pipeline's workers at `epoch`, whose sample order and random transforms are a
  // function of (seed, epoch) alone.
  absl::Status Reset(int64_t epoch) override;
  absl::StatusOr<bool> Next(Batch* batch) override;

  const dataset::Dataset& dataset() const { return dataset_; }
  // The running epoch's counters (images/s, queue depth, skipped files); zeros before Reset.
  dataset::PipelineStats Stats() const;

 private:
  // Repeats the epoch's last batch where skipped files left it short; false at its real end.
  bool RepeatLastBatch(Batch* batch);

  dataset::Dataset dataset_;
  std::unique_ptr<dataset::Iterator> iterator_;
  int64_t epoch_ = 0;
  int64_t batches_ = 0;  // delivered in this epoch, repeats included
  bool repeating_ = false;
  Batch last_;  // the epoch's last batch from the pipeline (training only)
};

// lockstep-train's transforms for classifying ImageFolder images at size x size. Training scales
// the shorter side to 9/8 of `size` and takes a random crop and flip; validation scales the same
// and takes the centre, so both see objects at one scale (a crop of the full-size image, or the
// whole image shrunk, would not). Pixels become [-1, 1] floats, (3, size, size); without
// `normalized` they stay uint8 (size, size, 3), for ModelOptions::normalize_images with the
// constants below.
std::vector<dataset::TransformPtr> ClassificationTransforms(int64_t size, bool training,
                                                            bool normalized = true);
// Their constants, for whoever prepares images elsewhere (an exported ONNX model's metadata):
// the shorter side before cropping, and Normalize's mean and std on 0..255 RGB values.
inline int64_t ClassificationResizeSize(int64_t size) { return size * 9 / 8; }
inline constexpr float kClassificationMean = 127.5f;
inline constexpr float kClassificationStd = 127.5f;

}  // namespace lockstep::train
