#pragma once

// Gradient accumulation: N micro-batches, one update (and one AllReduce) after the last. Two
// graphs share the parameters and state:
//   kMicroBatch: each gradient grad/<p> is added into the state "accum.<p>"
//     (Accumulate(accum, grad, beta) with the f32[] data input "accumulate_beta": 0 on the first
//     micro-batch of an update, 1 after); the graph has no gradient outputs.
//   kLastMicroBatch: each gradient output becomes grad + accum.<p>, which the data-parallel
//     passes reduce and ApplyOptimizer applies (dividing by N).
// Runs right after Autodiff, so that accum.<p> states come before the optimizer's moments in
// both graphs and sit at the same offsets of the shared state buffer.

#include <memory>
#include <string>

#include "graph/pass.h"

namespace lockstep::train {

// Which of the two graphs a compilation makes: the pass reads it from PassContext::config.
enum class MicroBatch { kAccumulate, kLast };

std::unique_ptr<Pass> CreateAccumulateGradientsPass();

// "accum.<parameter>".
std::string AccumulatorName(const std::string& parameter);
inline constexpr char kAccumulateBetaInput[] = "accumulate_beta";

}  // namespace lockstep::train
