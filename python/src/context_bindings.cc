// communication.init: the ranks of the job, started as the binaries start them (mpirun, srun,
// torchrun, lockstep-run, or alone as a world of one), and how a Python rank ends the job.

#include <pybind11/stl.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "examples/env_options.h"
#include "examples/termination.h"
#include "parallel/context.h"
#include "python/src/bindings.h"

namespace lockstep::python {
namespace py = pybind11;
namespace {

// MPI_Init takes the program's arguments; Python keeps its own.
parallel::Context Init() {
  EnvOptions env = ValueOrRaise(ReadEnvOptions());
  static char program[] = "python3";
  static char* argv_storage[] = {program, nullptr};
  int argc = 1;
  char** argv = argv_storage;
  absl::StatusOr<parallel::Context> ctx = parallel::Init(&argc, &argv, env.init);
  if (!ctx.ok()) std::exit(parallel::ReportFatal(ctx.status()));  // MPI may be half started
  // SIGTERM (scancel, mpirun ending the job) says which rank it ended; Ctrl-C stays Python's
  // KeyboardInterrupt, which Model.train sees between steps.
  ExplainTermination("");
  return *std::move(ctx);
}

}  // namespace

void BindContext(py::module_& m) {
  py::class_<parallel::Context>(m, "Context")
      .def_property_readonly("rank", &parallel::Context::rank)
      .def_property_readonly("size", &parallel::Context::size)
      .def_property_readonly("local_rank", &parallel::Context::local_rank)
      .def_property_readonly("local_size", &parallel::Context::local_size);
  m.def("init", &Init, "Starts the job's ranks from the launcher's environment (once).");
  m.def(
      "abort_job",
      [](const std::string& message) {
        std::cout << std::flush;
        // Under MPI every rank ends with this one; otherwise the others' next collective finds
        // this rank gone and ends them naming it.
        std::_Exit(parallel::ReportFatal(absl::AbortedError(message)));
      },
      "Prints 'lockstep: [rank R] error: <message>' and ends this rank and the job.");
}

}  // namespace lockstep::python
