#include "train/dataset_source.h"

#include "core/logging.h"
#include "dataset/transforms.h"

namespace lockstep::train {

absl::Status DatasetSource::Reset(int64_t epoch) {
  if (dataset_.plan().repeat != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("a training data set runs one epoch per Reset; remove its Repeat (",
                     dataset_.plan().repeat, " epochs)"));
  }
  iterator_.reset();  // joins the previous epoch's workers before new ones start
  LS_ASSIGN_OR_RETURN(iterator_, dataset_.MakeIterator(epoch));
  epoch_ = epoch;
  batches_ = 0;
  repeating_ = false;
  last_ = Batch();
  return absl::OkStatus();
}

absl::StatusOr<bool> DatasetSource::Next(Batch* batch) {
  if (iterator_ == nullptr) return absl::FailedPreconditionError("Next before Reset");
  dataset::Minibatch minibatch;
  LS_ASSIGN_OR_RETURN(bool more, iterator_->Next(&minibatch));
  if (!more) return RepeatLastBatch(batch);
  batch->images = std::move(minibatch.images);
  batch->labels = std::move(minibatch.labels);
  ++batches_;
  // Handles, not copies: the batch's storage stays alive for a repeat.
  if (dataset_.plan().drop_remainder) last_ = *batch;
  return true;
}

bool DatasetSource::RepeatLastBatch(Batch* batch) {
  const int64_t expected = dataset_.BatchesPerEpoch();
  if (!dataset_.plan().drop_remainder || batches_ >= expected || !last_.images.defined()) {
    return false;
  }
  if (!repeating_) {
    LS_LOG(Warning) << "epoch " << epoch_ + 1 << ": " << iterator_->Stats().skipped_files
                    << " skipped bad image file(s) left this rank " << expected - batches_
                    << " batch(es) short of the " << expected
                    << " that every rank takes; repeating its last batch";
    repeating_ = true;
  }
  *batch = last_;
  ++batches_;
  return true;
}

dataset::PipelineStats DatasetSource::Stats() const {
  return iterator_ != nullptr ? iterator_->Stats() : dataset::PipelineStats{};
}

std::vector<dataset::TransformPtr> ClassificationTransforms(int64_t size, bool training,
                                                            bool normalized) {
  std::vector<dataset::TransformPtr> steps = {dataset::Decode(),
                                              dataset::Resize(ClassificationResizeSize(size))};
  if (training) {
    steps.push_back(dataset::RandomCrop(size));
    steps.push_back(dataset::RandomHorizontalFlip());
  } else {
    steps.push_back(dataset::CenterCrop(size));
  }
  if (!normalized) return steps;
  steps.push_back(dataset::Normalize({kClassificationMean}, {kClassificationStd}));
  steps.push_back(dataset::HWC2CHW());
  return steps;
}

}  // namespace lockstep::train
