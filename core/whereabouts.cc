#include "core/whereabouts.h"

namespace lockstep {

void Whereabouts::EnterNode(absl::string_view node) {
  std::lock_guard<std::mutex> lock(mutex_);
  now_.node.assign(node.data(), node.size());  // keeps its capacity: no allocation per node
}

int64_t Whereabouts::IssueCollective(absl::string_view label) {
  std::lock_guard<std::mutex> lock(mutex_);
  now_.issued = next_sequence_++;
  now_.issued_label.assign(label.data(), label.size());
  return now_.issued;
}

void Whereabouts::CompleteCollective(int64_t sequence) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (sequence > now_.completed) now_.completed = sequence;
}

Whereabouts::Snapshot Whereabouts::Now() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return now_;
}

}  // namespace lockstep
