#include <pybind11/pybind11.h>

#include <string>

#include "parallel/agree.h"
#include "python/src/bindings.h"

namespace lockstep::python {
namespace {

PyObject* ExceptionType(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kDataLoss:  // a file whose bytes are bad, as MindSpore's readers say
      return PyExc_ValueError;
    case absl::StatusCode::kNotFound:
      return PyExc_FileNotFoundError;
    default:
      return PyExc_RuntimeError;
  }
}

}  // namespace

void RaiseIfError(const absl::Status& status) {
  if (status.ok()) return;
  pybind11::object error = pybind11::reinterpret_borrow<pybind11::object>(
      ExceptionType(status.code()))(std::string(status.message()));
  // Every rank raises the same agreed error: rank 0 alone reports it (communication's hook).
  error.attr("lockstep_agreed") = parallel::IsAgreedError(status);
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
  throw pybind11::error_already_set();
}

}  // namespace lockstep::python
