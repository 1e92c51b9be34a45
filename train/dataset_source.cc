#include "train/dataset_source.h"

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
  return absl::OkStatus();
}

absl::StatusOr<bool> DatasetSource::Next(Batch* batch) {
  if (iterator_ == nullptr) return absl::FailedPreconditionError("Next before Reset");
  dataset::Minibatch minibatch;
  LS_ASSIGN_OR_RETURN(bool more, iterator_->Next(&minibatch));
  if (!more) return false;
  batch->images = std::move(minibatch.images);
  batch->labels = std::move(minibatch.labels);
  return true;
}

dataset::PipelineStats DatasetSource::Stats() const {
  return iterator_ != nullptr ? iterator_->Stats() : dataset::PipelineStats{};
}

std::vector<dataset::TransformPtr> ClassificationTransforms(int64_t size, bool training) {
  std::vector<dataset::TransformPtr> steps = {dataset::Decode(),
                                              dataset::Resize(ClassificationResizeSize(size))};
  if (training) {
    steps.push_back(dataset::RandomCrop(size));
    steps.push_back(dataset::RandomHorizontalFlip());
  } else {
    steps.push_back(dataset::CenterCrop(size));
  }
  steps.push_back(dataset::Normalize({kClassificationMean}, {kClassificationStd}));
  steps.push_back(dataset::HWC2CHW());
  return steps;
}

}  // namespace lockstep::train
