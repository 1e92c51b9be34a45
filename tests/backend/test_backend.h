#pragma once

// A device of the tests' own, built only from the seams a backend plugs into (core/backend.h,
// core/layout.h, graph/kernel.h): host memory from an allocator of its own that counts what it
// hands out, 128-byte aligned (neither the CPU's 64 nor CUDA's 256, so that a plan made for
// another device shows); the host's copies, fills and timer, and no stream; one blocked layout
// of its own, "test_nc4hw"; and plain loops for the ops of a LeNet training graph
// (test_kernels.cc, test_conv_kernels.cc). Shows that a new backend is a folder and
// registrations, with no edit to core/, graph/, ops/ or parallel/.
//
// Like CUDA it has a current device per thread, device 0 until the thread makes another current
// (Backend::MakeCurrent), and, stricter than CUDA, refuses a call on device `index` (allocations,
// host memory, copies, fills, events, its stream) and MatMul's building and running (on CUDA,
// cuBLASLt's handle of the current device) on a thread where another device is current: where
// a GPU's thread would have started a context on GPU 0 and acted there. Each refusal is also
// kept for TakeMisuses, as some calls (FreeHost) cannot fail.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/backend.h"
#include "graph/kernel.h"

namespace lockstep::test_backend {

inline constexpr DeviceType kTestDeviceType =
    static_cast<DeviceType>(static_cast<int>(DeviceType::kFirstOther) + 1);
inline constexpr size_t kTestAlignment = 128;
// Channels per block of the blocked layout.
inline constexpr int64_t kChannelBlock = 4;

inline Device TestDevice() { return {kTestDeviceType, 0}; }

// "test_nc4hw": f32 (N, C, H, W) with C % 4 == 0, stored as (N, C/4, H, W, 4).
Layout BlockedLayout();

// The allocator's counts since the program started.
struct MemoryCounts {
  int64_t allocations = 0;  // every Allocate that succeeded
  int64_t live = 0;         // allocations not freed yet
  int64_t host_live = 0;    // AllocateHost's buffers not freed yet
};
MemoryCounts Memory();

// OK where device `index` is current on the calling thread; otherwise an error naming `call`,
// both devices and the thread, also kept for TakeMisuses.
absl::Status RequireCurrent(int index, const std::string& call);
// The refusals since the last call, in order, and forgets them.
std::vector<std::string> TakeMisuses();

// Where element (n, c, h, w) of an (N, C, H, W) tensor lies in plain or test_nc4hw memory.
class ActivationIndex {
 public:
  ActivationIndex(const Shape& shape, Layout layout);
  int64_t operator()(int64_t n, int64_t c, int64_t h, int64_t w) const {
    if (!blocked_) return ((n * c_ + c) * h_ + h) * w_ + w;
    return (((n * (c_ / kChannelBlock) + c / kChannelBlock) * h_ + h) * w_ + w) * kChannelBlock +
           c % kChannelBlock;
  }

 private:
  bool blocked_;
  int64_t c_, h_, w_;
};

// Copies `from` into `to` (same shape and dtype, host or test-device memory), reordering between
// plain and test_nc4hw; the backend's Reorder and the Reorder kernel both run it.
absl::Status Reorder(const Tensor& from, Layout from_layout, const Tensor& to, Layout to_layout);

// Layout choice of kernels that run in either layout: test_nc4hw for every input and output
// that may use it, plain for the rest.
LayoutChoice BlockedWhereEligible(const Node& node, const std::vector<Layout>& producer_layouts,
                                  const SharedLayouts& shared);

}  // namespace lockstep::test_backend
