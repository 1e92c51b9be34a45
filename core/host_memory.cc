#include "core/host_memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <string>

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

uint64_t HostMemoryAvailable() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  while (meminfo >> key >> kib) {
    if (key == "MemAvailable:") return kib * 1024;
    meminfo.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return static_cast<uint64_t>(sysconf(_SC_AVPHYS_PAGES)) *
         static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

absl::Status CheckHostMemory(uint64_t bytes, absl::string_view what) {
  const uint64_t limit = HostMemoryLimit();
  if (bytes <= limit) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(what, " needs ", bytes, " bytes, more than the ",
                                                   limit, " bytes of memory this process may use"));
}

}  // namespace lockstep
