#pragma once

// The extension module lockstep._core: one Bind function per part of the C++ API the Python
// package (python/lockstep/) drives. Python builds the graph and drives the loop; no Python runs
// inside a step.

#include <pybind11/pybind11.h>

#include <utility>

#include "core/status.h"

namespace lockstep::python {

void BindContext(pybind11::module_& m);     // communication.init, ranks, the job's end on errors
void BindTrace(pybind11::module_& m);       // Cells traced into the graph: layers, ops, values
void BindModel(pybind11::module_& m);       // Model, losses, optimizer, callbacks
void BindDataset(pybind11::module_& m);     // ImageFolder pipelines and their transforms
void BindCheckpoint(pybind11::module_& m);  // MindSpore .ckpt files read and written
void BindJob(pybind11::module_& m);         // the start-up checks the ranks agree on

// Raises a failed `status` in Python with its message: ValueError for a bad argument or a file
// whose bytes are bad, FileNotFoundError for a missing file, RuntimeError for the rest.
void RaiseIfError(const absl::Status& status);

template <typename T>
T ValueOrRaise(absl::StatusOr<T> value) {
  RaiseIfError(value.status());
  return *std::move(value);
}

}  // namespace lockstep::python
