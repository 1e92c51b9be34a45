// Tracing: a Python Cell's construct, run once per graph on symbolic values, adds the same nodes
// the C++ layers add. Values are the graph's own (python/lockstep/nn/_trace.py wraps them); the
// layers are train/layers.h's, built under the context of the Cell's place in the network.

#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/serialize.h"
#include "python/src/bindings.h"
#include "train/layers.h"
#include "train/loss.h"
#include "train/model.h"
#include "train/models.h"

namespace lockstep::python {
namespace py = pybind11;
namespace {

using train::Layer;
using train::NetContext;

// A Cell's construct as a layer: Build runs the Python tracer (with the GIL: Model compiles
// its graphs with the GIL released). A Python error becomes the builder's error, which the
// tracer has already worded with the line of construct it came from.
class PythonNet : public Layer {
 public:
  explicit PythonNet(py::function trace) : trace_(std::move(trace)) {}
  ~PythonNet() override {
    py::gil_scoped_acquire gil;
    trace_ = py::function();
  }

  Value* Build(const NetContext& ctx, Value* x) const override {
    py::gil_scoped_acquire gil;
    try {
      return trace_(ctx, x).cast<Value*>();
    } catch (py::error_already_set& e) {
      ctx.builder().Fail(absl::InvalidArgumentError(std::string(py::str(e.value()))));
    } catch (const std::exception& e) {
      ctx.builder().Fail(absl::InvalidArgumentError(e.what()));
    }
    return nullptr;
  }

 private:
  py::function trace_;
};

// Raises the builder's first error where the op that caused it was called from Python.
Value* Checked(const NetContext& ctx, Value* value) {
  RaiseIfError(ctx.builder().status());
  return value;
}

AttrValue ToAttr(const py::handle& value) {
  if (py::isinstance<py::bool_>(value)) return value.cast<bool>();
  if (py::isinstance<py::int_>(value)) return value.cast<int64_t>();
  if (py::isinstance<py::float_>(value)) return value.cast<double>();
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  return value.cast<std::vector<int64_t>>();
}

Attrs ToAttrs(const py::dict& attrs) {
  Attrs out;
  for (const auto& [name, value] : attrs) out.Set(name.cast<std::string>(), ToAttr(value));
  return out;
}

std::shared_ptr<Layer> Mutable(train::LayerPtr layer) {
  return std::const_pointer_cast<Layer>(std::move(layer));
}

// The forward graph of `net` for a batch of `image_shape` images, fingerprinted as
// graph/serialize.h fingerprints graphs (names, ops, attributes, shapes, order).
std::string NetFingerprint(const std::shared_ptr<Layer>& net, int64_t batch_size,
                           const Shape& image_shape, bool training) {
  absl::StatusOr<train::NetGraph> built;
  {
    py::gil_scoped_release release;  // a Python net takes it back to trace
    built = train::BuildNetGraph(*net, train::SoftmaxCrossEntropy(),
                                 training ? train::Mode::kTrain : train::Mode::kEval, batch_size,
                                 image_shape);
  }
  RaiseIfError(built.status());
  return Fingerprint(*built->graph);
}

}  // namespace

void BindTrace(py::module_& m) {
  py::class_<Value, std::unique_ptr<Value, py::nodelete>>(m, "Value")
      .def_property_readonly("shape",
                             [](const Value& v) {
                               return std::vector<int64_t>(v.shape().begin(), v.shape().end());
                             })
      .def_property_readonly("dtype", [](const Value& v) { return DTypeName(v.dtype()); });

  py::class_<NetContext>(m, "NetContext")
      .def(
          "child", [](const NetContext& ctx, const std::string& name) { return ctx.Child(name); },
          "The context of a child Cell called `name`.")
      .def_property_readonly("training",
                             [](const NetContext& c) { return c.mode() == train::Mode::kTrain; })
      .def_property_readonly("prefix", &NetContext::prefix)
      .def(
          "op",
          [](const NetContext& ctx, const std::string& op, const std::vector<Value*>& inputs,
             const py::dict& attrs) { return Checked(ctx, ctx.Op1(op, inputs, ToAttrs(attrs))); },
          py::arg("op"), py::arg("inputs"), py::arg("attrs") = py::dict(),
          py::return_value_policy::reference);

  py::class_<Layer, std::shared_ptr<Layer>>(m, "Layer")
      .def(
          "build",
          [](const Layer& layer, const NetContext& ctx, Value* x) {
            return Checked(ctx, layer.Build(ctx, x));
          },
          py::return_value_policy::reference);

  m.def(
      "conv2d",
      [](int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding,
         int64_t dilation, int64_t groups, bool bias) {
        return Mutable(std::make_shared<train::Conv2d>(
            in, out, kernel,
            train::Conv2dOptions{.stride = stride,
                                 .padding = padding,
                                 .dilation = dilation,
                                 .groups = groups,
                                 .bias = bias}));
      },
      py::arg("in_channels"), py::arg("out_channels"), py::arg("kernel"), py::arg("stride"),
      py::arg("padding"), py::arg("dilation"), py::arg("groups"), py::arg("bias"));
  m.def(
      "batch_norm2d",
      [](int64_t channels, double epsilon, double momentum, bool zero_gamma, bool sync) {
        return Mutable(std::make_shared<train::BatchNorm2d>(
            channels, train::BatchNorm2dOptions{.epsilon = epsilon,
                                                .momentum = momentum,
                                                .zero_gamma = zero_gamma,
                                                .sync = sync}));
      },
      py::arg("channels"), py::arg("epsilon"), py::arg("momentum"), py::arg("zero_gamma"),
      py::arg("sync"));
  m.def("dense", [](int64_t in, int64_t out, bool bias) {
    return Mutable(std::make_shared<train::Dense>(in, out, bias));
  });
  m.def("max_pool2d", [](int64_t kernel, int64_t stride, int64_t padding) {
    return Mutable(std::make_shared<train::MaxPool2d>(kernel, stride, padding));
  });
  m.def("avg_pool2d", [](int64_t kernel, int64_t stride, int64_t padding) {
    return Mutable(std::make_shared<train::AvgPool2d>(kernel, stride, padding));
  });
  m.def("python_net", [](py::function trace) {
    return std::shared_ptr<Layer>(std::make_shared<PythonNet>(std::move(trace)));
  });
  m.def(
      "model_by_name",
      [](const std::string& name, int64_t classes) {
        return Mutable(ValueOrRaise(train::models::ModelByName(name, classes)));
      },
      "A C++ reference model (train/models.h) by name.");
  m.def("net_fingerprint", &NetFingerprint, py::arg("net"), py::arg("batch_size"),
        py::arg("image_shape"), py::arg("training") = true);
}

}  // namespace lockstep::python
