#pragma once

namespace lockstep {

// OpenMP thread count used by CPU kernels (ours and oneDNN's, which runs on OpenMP here).
void SetNumThreads(int threads);
int NumThreads();
// Cores shared evenly by the ranks on this host: max(1, cores / local_ranks).
int DefaultThreads(int local_ranks);

}  // namespace lockstep
