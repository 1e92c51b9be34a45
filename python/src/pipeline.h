#pragma once

// What a Python data set hands the C++ side: the batched ImageFolder pipeline it describes
// (lockstep.dataset), which Model.train and Model.eval read through a train::DataSource.

#include <cstdint>
#include <memory>
#include <utility>

#include "core/status.h"
#include "core/tensor.h"
#include "dataset/dataset.h"
#include "train/data.h"

namespace lockstep::python {

struct Pipeline {
  dataset::Dataset dataset;  // batched, one epoch per iterator
  int64_t repeat = 1;        // .repeat(count): epochs of the pipeline in one pass
};

// The source Model.train and Model.eval read: one pass of the data set (repeat epochs of the
// pipeline) per Reset.
std::unique_ptr<train::DataSource> MakeSource(const Pipeline& pipeline);
// `pipeline` with its shards reading every sample once over all the ranks, neither padded nor
// cut, and its last batch kept: evaluation counts each image once, as lockstep-train's does.
Pipeline EverySampleOnce(const Pipeline& pipeline);
// The per-rank batch size and the (C, H, W) shape of the batch's images, as the model's graphs
// take them; an error when the data set does not end in batched float32 CHW images.
absl::StatusOr<std::pair<int64_t, Shape>> BatchShape(const Pipeline& pipeline);

}  // namespace lockstep::python
