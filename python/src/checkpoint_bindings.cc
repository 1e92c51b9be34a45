// MindSpore .ckpt files read and written by ckpt/reader.h and ckpt/writer.h, so a file from
// Python is byte for byte what lockstep-train writes. Python passes and gets (name, value)
// pairs: a value is a numpy array, or a str for MindSpore's text entries (append_info).

#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ckpt/reader.h"
#include "ckpt/writer.h"
#include "python/src/bindings.h"
#include "python/src/tensor_convert.h"

namespace lockstep::python {
namespace py = pybind11;
namespace {

// MindSpore stores a str as numpy's fixed-width unicode: UTF-32, little-endian on every host
// it runs on, without a byte-order mark.
std::string EncodeText(const py::str& text) {
  py::object bytes = py::reinterpret_steal<py::object>(
      PyUnicode_AsEncodedString(text.ptr(), "utf-32-le", "strict"));
  if (!bytes) throw py::error_already_set();
  return std::string(py::bytes(bytes));
}

py::str DecodeText(const std::string& path, const ckpt::Entry& entry) {
  if (entry.content.size() % 4 != 0) {
    throw py::value_error(absl::StrCat(path, ": text entry '", entry.name, "' holds ",
                                       entry.content.size(), " bytes, not UTF-32 characters"));
  }
  int little_endian = -1;
  PyObject* text =
      PyUnicode_DecodeUTF32(entry.content.data(), static_cast<Py_ssize_t>(entry.content.size()),
                            "strict", &little_endian);
  if (text == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(text);
}

using Value = std::variant<Tensor, std::string>;  // a tensor, or UTF-32 text

absl::Status WriteFile(const std::string& path,
                       const std::vector<std::pair<std::string, Value>>& entries) {
  LS_ASSIGN_OR_RETURN(ckpt::CheckpointWriter writer, ckpt::CheckpointWriter::Open(path));
  static const ckpt::TensorTypeInfo& kText = *ckpt::FindTensorType("str");
  for (const auto& [name, value] : entries) {
    if (const auto* tensor = std::get_if<Tensor>(&value)) {
      LS_RETURN_IF_ERROR(writer.Add(name, *tensor));
    } else {
      LS_RETURN_IF_ERROR(writer.AddRaw(name, kText, {}, std::get<std::string>(value)));
    }
  }
  return writer.Finish().status();
}

// Copies the values with the GIL held, then writes without it.
void WriteCheckpoint(const std::string& path, const py::list& entries) {
  std::vector<std::pair<std::string, Value>> values;
  values.reserve(entries.size());
  for (const py::handle item : entries) {
    auto [name, value] = item.cast<std::pair<std::string, py::object>>();
    if (py::isinstance<py::str>(value)) {
      values.emplace_back(std::move(name), EncodeText(value));
    } else {
      py::array array = py::array::ensure(value);
      if (!array) throw py::type_error("checkpoint entry '" + name + "' is not an array or str");
      values.emplace_back(std::move(name), FromNumpy(array));
    }
  }
  absl::Status status;
  {
    py::gil_scoped_release release;
    status = WriteFile(path, values);
  }
  RaiseIfError(status);
}

py::list ReadCheckpoint(const std::string& path, bool require_crc) {
  ckpt::ReadOptions options;
  options.require_crc = require_crc;
  absl::StatusOr<ckpt::CheckpointData> data;
  {
    py::gil_scoped_release release;
    data = ckpt::ReadCheckpoint(path, options);
  }
  RaiseIfError(data.status());
  py::list out;
  for (const ckpt::Entry& entry : data->entries) {
    if (!entry.type->numeric()) {
      out.append(py::make_tuple(entry.name, DecodeText(path, entry)));
      continue;
    }
    absl::StatusOr<Tensor> tensor = entry.ToTensor();
    if (!tensor.ok()) {
      RaiseIfError(absl::Status(tensor.status().code(),
                                absl::StrCat(path, ": ", tensor.status().message())));
    }
    out.append(py::make_tuple(entry.name, ToNumpy(*tensor)));
  }
  return out;
}

}  // namespace

void BindCheckpoint(py::module_& m) {
  m.def("write_checkpoint", &WriteCheckpoint, py::arg("path"), py::arg("entries"),
        "Writes [(name, numpy array or str)] as a MindSpore .ckpt with the CRC trailer, in order; "
        "the file appears under its name only once complete.");
  m.def("read_checkpoint", &ReadCheckpoint, py::arg("path"), py::arg("require_crc"),
        "[(name, numpy array or str)] of a .ckpt in file order, slices rejoined; the CRC trailer "
        "is checked when present and, with require_crc, required.");
}

}  // namespace lockstep::python
