#pragma once

// Helpers shared by the benchmarks under bench/.

#include <algorithm>
#include <vector>

#include "core/status.h"
#include "parallel/comm_group.h"

namespace lockstep::bench {

// The median of `values` (the mean of the middle two for an even count); values must not be
// empty.
inline double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// A barrier over the group's ranks, through its queue as every collective of the group goes.
inline absl::Status Barrier(parallel::CommGroup& group) {
  return group.RunNow("Barrier", [&group] { return group.communicator->Barrier(); });
}

}  // namespace lockstep::bench
