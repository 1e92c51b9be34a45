#pragma once

// Which rank, and where. When a collective times out, the rank that waited asks every other
// rank where it is, as PyTorch's NCCL flight recorder reports: the last collective each issued
// and completed (core/whereabouts.h) and the graph node each runs. The question travels on a
// channel of its own (an MPI communicator, or the rendezvous store of a job started without
// MPI), answered by a watchdog thread on each rank, so that a rank stuck in compute still
// answers; a rank that answers nothing within a few seconds is named unresponsive.

#include <chrono>
#include <cstdint>
#include <string>

#include "core/status.h"

namespace lockstep::parallel {

// Starts this rank's watchdog (under MPI, with more than one rank and MPI_THREAD_MULTIPLE) and
// whereabouts recording; StopWatchdog ends it before MPI_Finalize.
absl::Status StartWatchdog();
// The same without MPI: questions and answers travel through the rendezvous store at host:port
// (parallel/rendezvous.h) under `prefix`, over two connections of the watchdog's own.
absl::Status StartStoreWatchdog(const std::string& host, int port, const std::string& prefix,
                                int rank, int size, std::chrono::milliseconds timeout);
void StopWatchdog();

// Lines that follow a timeout message of collective #`waited`: one per rank, with the ranks that
// have not issued it named; empty without a watchdog (a world of one, or before Init).
std::string DescribeWhereRanksAre(int64_t waited);

}  // namespace lockstep::parallel
