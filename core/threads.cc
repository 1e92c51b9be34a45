#include "core/threads.h"

#include <omp.h>

#include <algorithm>
#include <thread>

namespace lockstep {

void SetNumThreads(int threads) { omp_set_num_threads(std::max(1, threads)); }

int NumThreads() { return omp_get_max_threads(); }

int DefaultThreads(int local_ranks) {
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1, cores / std::max(1, local_ranks));
}

}  // namespace lockstep
