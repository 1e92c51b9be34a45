#pragma once

// Linked into a test binary, replaces the global operator new to record the largest single
// allocation request.

#include <cstddef>

namespace lockstep::ckpt::testing {

void ResetLargestAllocation();
size_t LargestAllocation();

}  // namespace lockstep::ckpt::testing
