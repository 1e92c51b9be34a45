// Its own translation unit: inlined next to the allocations, the malloc/free pair would look
// mismatched to -Wmismatched-new-delete.

#include "tests/ckpt/allocation_tracker.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace lockstep::ckpt::testing {
namespace {
std::atomic<size_t> g_largest{0};
}  // namespace

void ResetLargestAllocation() { g_largest = 0; }
size_t LargestAllocation() { return g_largest.load(); }

}  // namespace lockstep::ckpt::testing

void* operator new(size_t size) {
  auto& largest = lockstep::ckpt::testing::g_largest;
  size_t seen = largest.load();
  while (size > seen && !largest.compare_exchange_weak(seen, size)) {
  }
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
