#pragma once

namespace lockstep {

// OpenMP thread count used by CPU kernels (ours and oneDNN's, which runs on OpenMP here).
void SetNumThreads(int threads);
// Cores shared evenly by the ranks on this host, but no more than this process may run on
// (sched_getaffinity): max(1, min(cores / local_ranks, bound cores)).
int DefaultThreads(int local_ranks);

}  // namespace lockstep
