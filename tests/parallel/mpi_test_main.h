#pragma once

// The parallel context that the main of every lockstep_mpi_test binary (mpi_test_main.cc)
// started before running the tests.

#include "parallel/context.h"

namespace lockstep {

const parallel::Context& TestContext();

}  // namespace lockstep
