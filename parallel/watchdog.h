#pragma once

// Which rank, and where. When a collective times out, the rank that waited asks every other
// rank where it is, as PyTorch's NCCL flight recorder reports: the last collective each issued
// and completed (core/whereabouts.h) and the graph node each runs. The question travels on a
// channel of its own (an MPI communicator, or the rendezvous store of a job started without
// MPI), answered by a watchdog thread on each rank, so that a rank stuck in compute still
// answers; a rank that answers nothing within a few seconds is named unresponsive.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/whereabouts.h"

namespace lockstep::parallel {

// One per rank of a multi-rank job, owned by its parallel::Context: answers "where are you" on
// a thread of its own until stopped, and asks every rank when a collective of this rank timed
// out. It holds the rank's whereabouts (core/whereabouts.h), which the rank's executors and
// collective queues record into and its answers read.
class Watchdog {
 public:
  // Under MPI, on a communicator of its own; null with one rank or below MPI_THREAD_MULTIPLE.
  static absl::StatusOr<std::shared_ptr<Watchdog>> OverMpi();
  // Without MPI: questions and answers travel through the rendezvous store at host:port
  // (parallel/rendezvous.h) under `prefix`, over two connections of the watchdog's own; null
  // with one rank.
  static absl::StatusOr<std::shared_ptr<Watchdog>> OverStore(const std::string& host, int port,
                                                             const std::string& prefix, int rank,
                                                             int size,
                                                             std::chrono::milliseconds timeout);
  virtual ~Watchdog() = default;

  // Lines that follow a timeout message of collective #`waited`: one per rank, with the ranks
  // that have not issued it named; empty once stopped.
  std::string DescribeWhereRanksAre(int64_t waited) const;
  // Ends the answering thread and frees what it talks over (before MPI_Finalize); a
  // communicator that still holds the watchdog then gets empty descriptions.
  virtual void Stop() = 0;

  // Where this rank is: for the executors of its graphs (CompileOptions::whereabouts) and its
  // collective queues to record into.
  const std::shared_ptr<Whereabouts>& whereabouts() const { return whereabouts_; }

 protected:
  Watchdog(int rank, int size) : rank_(rank), size_(size) {}
  // Every rank's answer, in rank order, within a few seconds; nullopt for a silent rank. This
  // rank's own entry is filled by DescribeWhereRanksAre.
  virtual std::vector<std::optional<Whereabouts::Snapshot>> Gather() const = 0;

  const int rank_;
  const int size_;
  const std::shared_ptr<Whereabouts> whereabouts_ = std::make_shared<Whereabouts>();
  std::atomic<bool> stopped_{false};
};

// `watchdog`'s description, or nothing without one (a world of one, or a test's communicator).
std::string DescribeWhereRanksAre(const Watchdog* watchdog, int64_t waited);
// Where a collective queue records its collectives: `watchdog`'s whereabouts, or without one a
// record of the queue's own, which nobody asks.
std::shared_ptr<Whereabouts> WhereaboutsFor(const Watchdog* watchdog);

}  // namespace lockstep::parallel
