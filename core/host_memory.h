#pragma once

// How much host memory this process may use, so that a size read from a file or a flag is
// refused with a message before an allocation of that size fails (or is granted by overcommit
// and fails later, on first touch).

#include <cstdint>

#include "absl/strings/string_view.h"
#include "core/status.h"

namespace lockstep {

// The machine's physical memory, or less where an address-space or data-segment limit
// (ulimit -v, ulimit -d) is lower.
uint64_t HostMemoryLimit();

// The memory the host can give now: MemAvailable of /proc/meminfo (free memory plus caches it
// can drop), or the free pages where the kernel does not report it, and no more than the
// process's cgroup (v2 memory.max less memory.current: a container's limit) has left. For sizing
// work, where HostMemoryLimit is for refusing sizes no run could hold.
uint64_t HostMemoryAvailable();

// What this process may still map under its own limits: the address-space limit (ulimit -v) less
// the address space it maps now (VmSize), and the data limit (ulimit -d) less its data (VmData);
// UINT64_MAX without limits.
uint64_t ProcessMemoryHeadroom();

// ResourceExhausted "<what> needs <bytes> bytes, more than ..." when `bytes` exceeds
// HostMemoryLimit().
absl::Status CheckHostMemory(uint64_t bytes, absl::string_view what);

}  // namespace lockstep
