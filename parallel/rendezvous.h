#pragma once

// How the ranks of a job started without MPI meet (parallel::Init with
// InitOptions::rendezvous): at the key-value store at the master (tcp_store.h), served by rank 0
// unless the launcher's agent serves it, under the prefix lockstep/<run id>/<restart count>/ so
// that a restarted group never meets the one before. Every rank says it arrived and with which
// world size; a rank that never arrives, or ranks started with different world sizes, end the
// start with one error naming the ranks. Then gloo connects every pair for the host
// collectives.

#include <chrono>
#include <memory>
#include <string>

#include "parallel/communicator.h"
#include "parallel/context.h"
#include "parallel/tcp_store.h"

namespace lockstep::parallel {

struct Meeting {
  std::unique_ptr<TcpStoreServer> server;  // on the rank that serves the store
  std::unique_ptr<TcpStore> store;
  std::shared_ptr<Communicator> host;  // gloo, untimed
  std::string prefix;                  // the job's keys in the store: lockstep/<run>/<restart>/
};

// Waits at most `timeout` for each stage (the store, every rank's arrival, gloo's connections).
absl::StatusOr<Meeting> MeetTheOtherRanks(const Rendezvous& rendezvous,
                                          std::chrono::milliseconds timeout);

}  // namespace lockstep::parallel
