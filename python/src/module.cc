#include <pybind11/pybind11.h>

#include "python/src/bindings.h"

PYBIND11_MODULE(_core, m) {
  m.doc() = "Lockstep's C++ core, driven by the Python package lockstep";
  lockstep::python::BindContext(m);
  lockstep::python::BindTrace(m);
  lockstep::python::BindModel(m);
  lockstep::python::BindDataset(m);
  lockstep::python::BindCheckpoint(m);
  lockstep::python::BindJob(m);
}
