// lockstep.dataset's C++ side: ImageFolder pipelines, their transforms, and reading their batches.
// The transforms and the worker threads are the C++ pipeline's; no Python runs per image.

#include <pybind11/stl.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dataset/encode.h"
#include "dataset/image_folder.h"
#include "dataset/transforms.h"
#include "python/src/bindings.h"
#include "python/src/pipeline.h"
#include "python/src/tensor_convert.h"
#include "train/dataset_source.h"

namespace lockstep::python {
namespace py = pybind11;
namespace {

// Epochs epoch * passes + k (k < passes) of the pipeline per Reset, so each repeat reshuffles;
// a negative `passes` repeats forever.
class RepeatSource : public train::DataSource {
 public:
  RepeatSource(dataset::Dataset dataset, int64_t passes)
      : epochs_(std::move(dataset)), passes_(passes) {}

  absl::Status Reset(int64_t epoch) override {
    first_ = epoch * std::max<int64_t>(passes_, 1);
    done_ = 0;
    any_ = false;
    return epochs_.Reset(first_);
  }

  absl::StatusOr<bool> Next(train::Batch* batch) override {
    for (;;) {
      LS_ASSIGN_OR_RETURN(bool more, epochs_.Next(batch));
      if (more) {
        any_ = true;
        return true;
      }
      ++done_;
      // An epoch without batches (drop_remainder with fewer samples) would spin forever.
      if (done_ == passes_ || !any_) return false;
      any_ = false;
      LS_RETURN_IF_ERROR(epochs_.Reset(first_ + done_));
    }
  }

 private:
  train::DatasetSource epochs_;
  int64_t passes_;
  int64_t first_ = 0;
  int64_t done_ = 0;  // epochs finished in this pass
  bool any_ = false;  // the running epoch has delivered a batch
};

// A Python iterator's view of a pipeline: numpy batches, the GIL released while workers run.
class PipelineReader {
 public:
  explicit PipelineReader(const Pipeline& pipeline) : source_(pipeline.dataset, pipeline.repeat) {}

  void Reset(int64_t epoch) {
    absl::Status status;
    {
      py::gil_scoped_release release;
      status = source_.Reset(epoch);
    }
    RaiseIfError(status);
  }

  // (images, labels) of the next batch, or None at the end of the pass.
  std::optional<std::pair<py::array, py::array>> Next() {
    train::Batch batch;
    absl::StatusOr<bool> more;
    {
      py::gil_scoped_release release;
      more = source_.Next(&batch);
    }
    if (!ValueOrRaise(std::move(more))) return std::nullopt;
    return std::make_pair(ToNumpy(batch.images), ToNumpy(batch.labels));
  }

 private:
  RepeatSource source_;
};

// A transform as Python holds it: opaque, listed in the order a map runs them.
struct TransformHandle {
  dataset::TransformPtr transform;
};

// Bad arguments are reported where the transform is made, as MindSpore's are.
TransformHandle Checked(dataset::TransformPtr transform) {
  RaiseIfError(transform->Validate());
  return {std::move(transform)};
}

void BindTransforms(py::module_& m) {
  py::class_<TransformHandle>(m, "Transform").def("__repr__", [](const TransformHandle& t) {
    return t.transform->Name();
  });
  py::module_ t = m.def_submodule("transforms", "The C++ per-sample transforms (transforms.h)");
  t.def("Decode", [] { return Checked(dataset::Decode()); });
  t.def("Resize", [](int64_t size) { return Checked(dataset::Resize(size)); });
  t.def("Resize",
        [](int64_t height, int64_t width) { return Checked(dataset::Resize(height, width)); });
  t.def("RandomCrop",
        [](int64_t size, int64_t padding) { return Checked(dataset::RandomCrop(size, padding)); });
  t.def("RandomResizedCrop",
        [](int64_t size, std::pair<float, float> scale, std::pair<float, float> ratio) {
          return Checked(dataset::RandomResizedCrop(size, scale, ratio));
        });
  t.def("CenterCrop", [](int64_t size) { return Checked(dataset::CenterCrop(size)); });
  t.def("RandomHorizontalFlip",
        [](float probability) { return Checked(dataset::RandomHorizontalFlip(probability)); });
  t.def("Normalize", [](std::vector<float> mean, std::vector<float> std) {
    return Checked(dataset::Normalize(std::move(mean), std::move(std)));
  });
  t.def("HWC2CHW", [] { return Checked(dataset::HWC2CHW()); });
  t.def("TypeCast", [](const std::string& dtype_name) {
    DType dtype;
    if (!ParseDType(dtype_name, &dtype)) {
      throw py::value_error("TypeCast: unknown element type '" + dtype_name + "'");
    }
    return Checked(dataset::TypeCast(dtype));
  });
  // vision.encode_jpeg, as MindSpore's; the tests write their JPEG files with it.
  m.def(
      "encode_jpeg",
      [](const py::array& image, int quality) {
        std::vector<uint8_t> bytes =
            ValueOrRaise(dataset::EncodeJpeg(FromNumpy(image), {.quality = quality}));
        return py::array_t<uint8_t>(static_cast<py::ssize_t>(bytes.size()), bytes.data());
      },
      "(H, W, C) uint8 with C = 1 or 3 -> the bytes of a JPEG file", py::arg("image"),
      py::arg("quality"));
}

Pipeline MakePipeline(const dataset::Dataset& folder, const std::vector<TransformHandle>& steps,
                      int64_t batch_size, bool drop_remainder, int num_workers, int64_t repeat) {
  std::vector<dataset::TransformPtr> transforms;
  for (const TransformHandle& step : steps) transforms.push_back(step.transform);
  return {
      .dataset =
          folder.Map(std::move(transforms)).Batch(batch_size, drop_remainder).Workers(num_workers),
      .repeat = repeat};
}

void BindPipelines(py::module_& m) {
  py::class_<dataset::ImageFolderOptions>(m, "ImageFolderOptions")
      .def(py::init<>())
      .def_readwrite("shuffle", &dataset::ImageFolderOptions::shuffle)
      .def_readwrite("num_shards", &dataset::ImageFolderOptions::num_shards)
      .def_readwrite("shard_id", &dataset::ImageFolderOptions::shard_id)
      .def_readwrite("extensions", &dataset::ImageFolderOptions::extensions)
      .def_readwrite("class_indexing", &dataset::ImageFolderOptions::class_indexing)
      .def_readwrite("num_samples", &dataset::ImageFolderOptions::num_samples)
      .def_readwrite("decode", &dataset::ImageFolderOptions::decode)
      .def_readwrite("seed", &dataset::ImageFolderOptions::seed);
  // The folder walked once; pipelines over it share its file list.
  py::class_<dataset::Dataset>(m, "ImageFolder")
      .def_property_readonly("class_names", &dataset::Dataset::class_names);
  m.def(
      "open_image_folder",
      [](const std::string& root, const dataset::ImageFolderOptions& options) {
        absl::StatusOr<dataset::Dataset> folder;
        {
          py::gil_scoped_release release;  // a large tree takes seconds to walk
          folder = dataset::ImageFolder(root, options);
        }
        return ValueOrRaise(std::move(folder));
      },
      py::arg("root"), py::arg("options"));
  py::class_<Pipeline>(m, "Pipeline")
      .def_property_readonly("batches_per_epoch",
                             [](const Pipeline& p) { return p.dataset.BatchesPerEpoch(); });
  m.def("pipeline", &MakePipeline, py::arg("folder"), py::arg("transforms"), py::arg("batch_size"),
        py::arg("drop_remainder"), py::arg("num_workers"), py::arg("repeat"));
  py::class_<PipelineReader>(m, "PipelineReader")
      .def(py::init<const Pipeline&>())
      .def("reset", &PipelineReader::Reset, py::arg("epoch"))
      .def("next", &PipelineReader::Next);
}

}  // namespace

std::unique_ptr<train::DataSource> MakeSource(const Pipeline& pipeline) {
  // As MindSpore's sink mode: an endless repeat trains one pass of the data per epoch.
  return std::make_unique<RepeatSource>(pipeline.dataset, std::max<int64_t>(pipeline.repeat, 1));
}

Pipeline EverySampleOnce(const Pipeline& pipeline) {
  const dataset::PipelinePlan& plan = pipeline.dataset.plan();
  dataset::ShardOptions shard = plan.shard;
  shard.uneven_tail = true;
  return {.dataset = dataset::Dataset(plan.source, shard, plan.on_bad_file)
                         .Map(plan.transforms)
                         .Batch(plan.batch_size)
                         .Workers(plan.num_workers)};
}

absl::StatusOr<std::pair<int64_t, Shape>> BatchShape(const Pipeline& pipeline) {
  const dataset::PipelinePlan& plan = pipeline.dataset.plan();
  // Transforms have no shape inference: one image goes through them, on one worker.
  dataset::Dataset probe(plan.source, {.shuffle = false}, plan.on_bad_file);
  LS_ASSIGN_OR_RETURN(std::unique_ptr<dataset::Iterator> iterator,
                      probe.Map(plan.transforms).Workers(1).Prefetch(1).MakeIterator());
  dataset::Minibatch first;
  LS_ASSIGN_OR_RETURN(bool any, iterator->Next(&first));
  if (!any) return absl::InvalidArgumentError("the data set has no readable image");
  const Shape image(first.images.shape().begin() + 1, first.images.shape().end());
  const bool chw = std::any_of(plan.transforms.begin(), plan.transforms.end(),
                               [](const auto& t) { return t->Name() == "HWC2CHW"; });
  if (first.images.dtype() != DType::kF32 || image.size() != 3 || !chw) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the model takes float32 (C, H, W) images; the data set's are ",
        DTypeName(first.images.dtype()), " ", ShapeToString(image), chw ? "" : " without HWC2CHW",
        ": map Decode, ..., Normalize and HWC2CHW over its \"image\" column"));
  }
  return std::make_pair(plan.batch_size, image);
}

void BindDataset(py::module_& m) {
  BindTransforms(m);
  BindPipelines(m);
}

}  // namespace lockstep::python
