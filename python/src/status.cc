#include <pybind11/pybind11.h>

#include <string>

#include "python/src/bindings.h"

namespace lockstep::python {

void RaiseIfError(const absl::Status& status) {
  if (status.ok()) return;
  const std::string message(status.message());
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      throw pybind11::value_error(message);
    case absl::StatusCode::kNotFound:
      PyErr_SetString(PyExc_FileNotFoundError, message.c_str());
      throw pybind11::error_already_set();
    default:
      throw std::runtime_error(message);
  }
}

}  // namespace lockstep::python
