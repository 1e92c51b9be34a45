#pragma once

// Where a rank is, for the report a hung collective produces (parallel/watchdog.h): the graph
// node its executor runs and the last collective its queues issued and completed, each with a
// sequence number that matches across ranks (every rank issues the same collectives in the same
// order). One record per rank, held by the rank's watchdog, which the parallel::Context owns;
// the executors of the rank's graphs and its collective queues write to it.

#include <cstdint>
#include <mutex>
#include <string>

#include "absl/strings/string_view.h"

namespace lockstep {

class Whereabouts {
 public:
  struct Snapshot {
    int64_t issued = 0;  // sequence number of the last collective issued, 0 when none
    std::string issued_label;
    int64_t completed = 0;
    std::string node;  // empty between steps
  };

  // The executor, before each node's kernel ("Conv2D node 'layer1.0.conv1' (#12)"), and after
  // its step.
  void EnterNode(absl::string_view node);
  void LeaveStep() { EnterNode(""); }

  // A collective queue: IssueCollective numbers the collective (from 1) and CompleteCollective
  // marks it done.
  int64_t IssueCollective(absl::string_view label);
  void CompleteCollective(int64_t sequence);

  Snapshot Now() const;

 private:
  mutable std::mutex mutex_;
  Snapshot now_;               // guarded by mutex_
  int64_t next_sequence_ = 1;  // guarded by mutex_
};

}  // namespace lockstep
