#include "core/whereabouts.h"

#include <atomic>
#include <mutex>

namespace lockstep::whereabouts {
namespace {

std::atomic<bool> g_enabled{false};
std::mutex g_mutex;
Snapshot g_now;                           // guarded by g_mutex
std::atomic<int64_t> g_next_sequence{1};  // numbered even when not recording

}  // namespace

void Enable() { g_enabled.store(true); }

void EnterNode(absl::string_view node) {
  if (!g_enabled.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  g_now.node.assign(node.data(), node.size());  // keeps its capacity: no allocation per node
}

void LeaveStep() { EnterNode(""); }

int64_t IssueCollective(absl::string_view label) {
  const int64_t sequence = g_next_sequence.fetch_add(1);
  if (g_enabled.load(std::memory_order_relaxed)) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_now.issued = sequence;
    g_now.issued_label.assign(label.data(), label.size());
  }
  return sequence;
}

void CompleteCollective(int64_t sequence) {
  if (!g_enabled.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (sequence > g_now.completed) g_now.completed = sequence;
}

Snapshot Now() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_now;
}

}  // namespace lockstep::whereabouts
