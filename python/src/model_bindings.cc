// Model: train::Model driven from Python. Training and evaluation run in C++ with the GIL
// released; Python callbacks take it between steps, never inside one.

#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/amp.h"
#include "python/src/bindings.h"
#include "python/src/pipeline.h"
#include "python/src/tensor_convert.h"
#include "train/callbacks.h"
#include "train/checkpoint_callback.h"
#include "train/loss.h"
#include "train/model.h"

namespace lockstep::python {
namespace py = pybind11;
namespace {

using train::Callback;
using train::Model;

// The Python callbacks of one Model.train, through the dispatcher in lockstep/train/callback/
// (its `event(name, info)`), and Ctrl-C: Python's SIGINT handler runs between steps. What Python
// raises ends training; Model.train raises it again, traceback and all.
class PythonCallbacks : public Callback {
 public:
  explicit PythonCallbacks(py::object dispatcher) : dispatcher_(std::move(dispatcher)) {}
  ~PythonCallbacks() override {
    py::gil_scoped_acquire gil;
    dispatcher_ = py::object();
    raised_.reset();
  }

  absl::Status OnTrainBegin(Model&) override {
    py::gil_scoped_acquire gil;
    return Event("train_begin", py::dict());
  }
  absl::Status OnEpochBegin(Model&, int64_t epoch) override {
    py::gil_scoped_acquire gil;
    return Event("epoch_begin", py::dict(py::arg("epoch") = epoch));
  }
  absl::Status OnStepEnd(Model&, const train::StepInfo& step) override {
    py::gil_scoped_acquire gil;
    return Event(
        "step_end",
        py::dict(py::arg("epoch") = step.epoch, py::arg("step") = step.step,
                 py::arg("global_step") = step.global_step, py::arg("loss") = step.loss,
                 py::arg("lr") = step.lr, py::arg("batch_size") = step.batch_size,
                 py::arg("seconds") = step.seconds, py::arg("last_in_epoch") = step.last_in_epoch,
                 py::arg("update_skipped") = step.update_skipped,
                 py::arg("loss_scale") = step.loss_scale));
  }
  absl::Status OnEpochEnd(Model&, const train::EpochInfo& epoch) override {
    py::gil_scoped_acquire gil;
    return Event("epoch_end",
                 py::dict(py::arg("epoch") = epoch.epoch, py::arg("steps") = epoch.steps,
                          py::arg("images") = epoch.images, py::arg("seconds") = epoch.seconds,
                          py::arg("mean_loss") = epoch.mean_loss));
  }
  absl::Status OnTrainEnd(Model&) override {
    py::gil_scoped_acquire gil;
    return Event("train_end", py::dict());
  }

  bool stop_requested() const { return stop_requested_; }
  // Raises what a callback or Ctrl-C raised.
  void RaiseIfRaised() {
    if (raised_ != nullptr) {
      raised_->restore();
      throw py::error_already_set();
    }
  }

 private:
  // With the GIL held.
  absl::Status Event(const char* name, py::dict info) {
    try {
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
      if (dispatcher_.attr("event")(name, std::move(info)).cast<bool>()) {
        stop_requested_ = true;
        return absl::CancelledError("a callback asked to stop (RunContext.request_stop)");
      }
      return absl::OkStatus();
    } catch (py::error_already_set& e) {
      raised_ = std::make_shared<py::error_already_set>(std::move(e));
      return absl::CancelledError(absl::StrCat("a Python callback raised at ", name));
    }
  }

  py::object dispatcher_;
  std::shared_ptr<py::error_already_set> raised_;
  bool stop_requested_ = false;
};

struct DynamicScaleArgs {
  double initial, factor;
  int64_t window;
};

// Every option Model(...) in lockstep/train/model.py gathers from the script.
struct ModelArgs {
  int64_t batch_size;
  std::vector<int64_t> image_shape;
  uint64_t seed;
  std::vector<double> learning_rates;  // one: constant; more: per global step, the last kept
  double momentum, weight_decay, gradient_divisor;
  bool nesterov;
  double loss_scale;
  std::optional<DynamicScaleArgs> dynamic_loss_scale;
  std::string amp_level, device;
  std::optional<parallel::Context> context;
  bool data_parallel, gradients_mean, sync_batch_norm;
  std::vector<int> all_reduce_fusion_config;
};

train::LrSchedule Schedule(std::vector<double> rates) {
  if (rates.size() == 1) return train::ConstantLr(rates[0]);
  return train::LrSchedule([rates = std::move(rates)](int64_t step) {
    return rates[std::min<size_t>(static_cast<size_t>(step), rates.size() - 1)];
  });
}

std::unique_ptr<Model> MakeModel(std::shared_ptr<train::Layer> net, ModelArgs args) {
  train::ModelOptions options{
      .loss_scale = args.loss_scale,
      .batch_size = args.batch_size,
      .image_shape = Shape(args.image_shape.begin(), args.image_shape.end()),
      .seed = args.seed,
      .context = args.context};
  if (args.dynamic_loss_scale.has_value()) {
    options.dynamic_loss_scale =
        train::DynamicLossScale{.initial = args.dynamic_loss_scale->initial,
                                .factor = args.dynamic_loss_scale->factor,
                                .window = args.dynamic_loss_scale->window};
  }
  if (!ParseAmpLevel(args.amp_level, &options.amp_level)) {
    throw py::value_error("amp_level must be O0, O1, O2 or O3, got '" + args.amp_level + "'");
  }
  if (args.context.has_value()) {
    options.device = ValueOrRaise(args.context->DeviceFor(args.device));
  }
  if (args.data_parallel) {
    options.parallel = {.mode = parallel::ParallelMode::kDataParallel,
                        .gradients_mean = args.gradients_mean,
                        .all_reduce_fusion_config = std::move(args.all_reduce_fusion_config),
                        .sync_batch_norm = args.sync_batch_norm};
  }
  return std::make_unique<Model>(std::move(net), train::SoftmaxCrossEntropy(),
                                 train::Momentum{.lr = Schedule(std::move(args.learning_rates)),
                                                 .momentum = args.momentum,
                                                 .weight_decay = args.weight_decay,
                                                 .nesterov = args.nesterov,
                                                 .gradient_divisor = args.gradient_divisor},
                                 std::move(options));
}

void Train(Model& model, int64_t epochs, const Pipeline& pipeline,
           std::vector<std::shared_ptr<Callback>> callbacks, py::object dispatcher) {
  auto python = std::make_shared<PythonCallbacks>(std::move(dispatcher));
  callbacks.push_back(python);
  std::unique_ptr<train::DataSource> source = MakeSource(pipeline);
  absl::Status status;
  {
    py::gil_scoped_release release;
    status = model.Train(epochs, *source, callbacks);
  }
  python->RaiseIfRaised();
  if (!python->stop_requested()) RaiseIfError(status);
}

// Over every rank's share of the data set, each image once (its shards neither padded nor cut).
py::dict Eval(Model& model, const Pipeline& pipeline) {
  std::unique_ptr<train::DataSource> source = MakeSource(EverySampleOnce(pipeline));
  absl::StatusOr<train::EvalResult> result;
  {
    py::gil_scoped_release release;
    result = model.Eval(*source);
  }
  RaiseIfError(result.status());
  return py::dict(py::arg("accuracy") = result->accuracy, py::arg("loss") = result->loss,
                  py::arg("samples") = result->samples, py::arg("correct") = result->correct);
}

void BindCallbacks(py::module_& m) {
  m.def(
      "batch_shape",
      [](const Pipeline& pipeline) {
        absl::StatusOr<std::pair<int64_t, Shape>> shape;
        {
          py::gil_scoped_release release;  // decodes an image
          shape = BatchShape(pipeline);
        }
        return ValueOrRaise(shape);
      },
      "The per-rank batch size and the (C, H, W) of a data set's images.");
  py::class_<Callback, std::shared_ptr<Callback>>(m, "Callback");
  m.def("loss_monitor", [](int64_t per_print_steps) -> std::shared_ptr<Callback> {
    return std::make_shared<train::LossMonitor>(per_print_steps);
  });
  m.def("time_monitor",
        []() -> std::shared_ptr<Callback> { return std::make_shared<train::TimeMonitor>(); });
  m.def(
      "model_checkpoint",
      [](const std::string& prefix, const std::string& directory, int64_t steps, int64_t epochs,
         int keep_max) -> std::shared_ptr<Callback> {
        return std::make_shared<train::ModelCheckpoint>(
            ckpt::CheckpointConfig{.save_checkpoint_steps = steps,
                                   .save_checkpoint_epochs = epochs,
                                   .keep_checkpoint_max = keep_max,
                                   .directory = directory},
            prefix);
      },
      py::arg("prefix"), py::arg("directory"), py::arg("save_checkpoint_steps"),
      py::arg("save_checkpoint_epochs"), py::arg("keep_checkpoint_max"));
}

}  // namespace

void BindModel(py::module_& m) {
  BindCallbacks(m);
  py::class_<DynamicScaleArgs>(m, "DynamicScale")
      .def(py::init<double, double, int64_t>(), py::arg("initial"), py::arg("factor"),
           py::arg("window"))
      .def_readonly("initial", &DynamicScaleArgs::initial)
      .def_readonly("factor", &DynamicScaleArgs::factor)
      .def_readonly("window", &DynamicScaleArgs::window);
  py::class_<Model>(m, "Model")
      .def(py::init([](std::shared_ptr<train::Layer> net, int64_t batch_size,
                       std::vector<int64_t> image_shape, uint64_t seed,
                       std::vector<double> learning_rates, double momentum, double weight_decay,
                       bool nesterov, double gradient_divisor, double loss_scale,
                       std::optional<DynamicScaleArgs> dynamic_loss_scale, std::string amp_level,
                       std::string device, std::optional<parallel::Context> context,
                       bool data_parallel, bool gradients_mean, bool sync_batch_norm,
                       std::vector<int> all_reduce_fusion_config) {
             return MakeModel(
                 std::move(net),
                 {batch_size, std::move(image_shape), seed, std::move(learning_rates), momentum,
                  weight_decay, gradient_divisor, nesterov, loss_scale, dynamic_loss_scale,
                  std::move(amp_level), std::move(device), std::move(context), data_parallel,
                  gradients_mean, sync_batch_norm, std::move(all_reduce_fusion_config)});
           }),
           py::kw_only(), py::arg("net"), py::arg("batch_size"), py::arg("image_shape"),
           py::arg("seed"), py::arg("learning_rates"), py::arg("momentum"), py::arg("weight_decay"),
           py::arg("nesterov"), py::arg("gradient_divisor"), py::arg("loss_scale"),
           py::arg("dynamic_loss_scale"), py::arg("amp_level"), py::arg("device"),
           py::arg("context"), py::arg("data_parallel"), py::arg("gradients_mean"),
           py::arg("sync_batch_norm"), py::arg("all_reduce_fusion_config"))
      .def("compile",
           [](Model& model) {
             absl::Status status;
             {
               py::gil_scoped_release release;
               status = model.Compile();
             }
             RaiseIfError(status);
           })
      .def("train", &Train)
      .def(
          "train_step",
          [](Model& model, const py::array& images, const py::array& labels) {
            const train::Batch batch{.images = FromNumpy(images), .labels = FromNumpy(labels)};
            absl::StatusOr<double> loss;
            {
              py::gil_scoped_release release;
              loss = model.TrainStep(batch);
            }
            return ValueOrRaise(loss);
          },
          "One training step on one batch (benchmarks: the loop of Model.train is C++).")
      .def("eval", &Eval)
      .def("variable",
           [](const Model& model, const std::string& name) {
             return ToNumpy(ValueOrRaise(model.Variable(name)));
           })
      .def("set_variable",
           [](Model& model, const std::string& name, const py::array& value) {
             RaiseIfError(model.SetVariable(name, FromNumpy(value)));
           })
      .def("parameters",
           [](const Model& model) {
             std::vector<std::pair<std::string, bool>> out;
             for (const train::ParameterSpec& spec : model.parameters()) {
               out.emplace_back(spec.name, spec.role == InputRole::kParameter);
             }
             return out;
           })
      .def_property_readonly("global_step", &Model::global_step)
      .def_property_readonly("epochs_done", &Model::epochs_done);
}

}  // namespace lockstep::python
