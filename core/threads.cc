#include "core/threads.h"

#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <thread>

namespace lockstep {

void SetNumThreads(int threads) { omp_set_num_threads(std::max(1, threads)); }

int DefaultThreads(int local_ranks) {
  const int share =
      static_cast<int>(std::thread::hardware_concurrency()) / std::max(1, local_ranks);
  // A process bound to fewer cores (mpirun's binding, taskset) would only oversubscribe them.
  cpu_set_t allowed;
  const int bound =
      sched_getaffinity(0, sizeof(allowed), &allowed) == 0 ? CPU_COUNT(&allowed) : share;
  return std::max(1, std::min(share, bound));
}

}  // namespace lockstep
