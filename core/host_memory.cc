#include "core/host_memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>

namespace lockstep {
namespace {

uint64_t SoftLimit(int resource) {
  struct rlimit limit;
  if (getrlimit(resource, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
  return static_cast<uint64_t>(limit.rlim_cur);
}

}  // namespace

uint64_t HostMemoryLimit() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_bytes = sysconf(_SC_PAGESIZE);
  const uint64_t physical = pages > 0 && page_bytes > 0
                                ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_bytes)
                                : UINT64_MAX;
  return std::min({physical, SoftLimit(RLIMIT_AS), SoftLimit(RLIMIT_DATA)});
}

absl::Status CheckHostMemory(uint64_t bytes, absl::string_view what) {
  const uint64_t limit = HostMemoryLimit();
  if (bytes <= limit) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(what, " needs ", bytes, " bytes, more than the ",
                                                   limit, " bytes of memory this process may use"));
}

}  // namespace lockstep
