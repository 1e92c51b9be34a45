#pragma once

// The parallel context that the main of every lockstep_mpi_test binary (mpi_test_main.cc)
// started before running the tests.

#include "parallel/context.h"

namespace lockstep {

const parallel::Context& TestContext();

}  // namespace lockstep

// In a test of MPI's own communicator (its chunks, segments, MPI errors): under another launcher
// (lockstep-run, gloo) every rank skips it alike.
#define LOCKSTEP_SKIP_UNLESS_MPI()                                             \
  if (!::lockstep::TestContext().launched_by_mpi()) {                          \
    GTEST_SKIP() << "tests MPI's own communicator; this job runs without MPI"; \
  }

namespace lockstep {}  // namespace lockstep
