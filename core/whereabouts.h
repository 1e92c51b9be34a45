#pragma once

// Where this rank is, for the report a hung collective produces (parallel/watchdog.h): the graph
// node the executor runs and the last collective issued and completed, each with a sequence
// number that matches across ranks (every rank issues the same collectives in the same order).
// Recording starts with Enable (the watchdog of a multi-rank job); until then every call is one
// relaxed atomic load.

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace lockstep::whereabouts {

void Enable();

// The executor, before each node's kernel ("Conv2D node 'layer1.0.conv1' (#12)"), and after its
// step.
void EnterNode(absl::string_view node);
void LeaveStep();

// A collective queue: IssueCollective numbers the collective (from 1) and CompleteCollective
// marks it done.
int64_t IssueCollective(absl::string_view label);
void CompleteCollective(int64_t sequence);

struct Snapshot {
  int64_t issued = 0;  // sequence number of the last collective issued, 0 when none
  std::string issued_label;
  int64_t completed = 0;
  std::string node;  // empty between steps
};
Snapshot Now();

}  // namespace lockstep::whereabouts
