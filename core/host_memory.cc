#include "core/host_memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <optional>
#include <string>

namespace lockstep {
namespace {

uint64_t SoftLimit(int resource) {
  struct rlimit limit;
  if (getrlimit(resource, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
  return static_cast<uint64_t>(limit.rlim_cur);
}

// The "Key:  N kB" line `key` of a /proc file (meminfo, self/status), in bytes.
std::optional<uint64_t> ProcKibField(const char* file, const std::string& key) {
  std::ifstream in(file);
  std::string name;
  uint64_t kib = 0;
  while (in >> name) {  // lines without a number ("Name:\tlockstep-train") are passed over
    if (name == key && in >> kib) return kib * 1024;
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return std::nullopt;
}

// The first number of a cgroup file ("max" and missing files: UINT64_MAX).
uint64_t CgroupValue(const std::string& path) {
  std::ifstream file(path);
  uint64_t value = 0;
  return file >> value ? value : UINT64_MAX;
}

// memory.max less memory.current of this process's cgroup (v2); UINT64_MAX without a limit.
uint64_t CgroupHeadroom() {
  std::ifstream membership("/proc/self/cgroup");
  std::string line;
  while (std::getline(membership, line)) {
    if (!line.starts_with("0::")) continue;  // the v2 hierarchy
    const std::string dir = "/sys/fs/cgroup" + line.substr(3);
    const uint64_t max = CgroupValue(dir + "/memory.max");
    if (max == UINT64_MAX) return UINT64_MAX;
    const uint64_t current = CgroupValue(dir + "/memory.current");
    return current == UINT64_MAX || current >= max ? 0 : max - current;
  }
  return UINT64_MAX;
}

uint64_t Less(uint64_t limit, uint64_t used) {
  if (limit == UINT64_MAX) return UINT64_MAX;
  return limit > used ? limit - used : 0;
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
  const uint64_t available = ProcKibField("/proc/meminfo", "MemAvailable:")
                                 .value_or(static_cast<uint64_t>(sysconf(_SC_AVPHYS_PAGES)) *
                                           static_cast<uint64_t>(sysconf(_SC_PAGESIZE)));
  return std::min(available, CgroupHeadroom());
}

uint64_t ProcessMemoryHeadroom() {
  return std::min(
      Less(SoftLimit(RLIMIT_AS), ProcKibField("/proc/self/status", "VmSize:").value_or(0)),
      Less(SoftLimit(RLIMIT_DATA), ProcKibField("/proc/self/status", "VmData:").value_or(0)));
}

absl::Status CheckHostMemory(uint64_t bytes, absl::string_view what) {
  const uint64_t limit = HostMemoryLimit();
  if (bytes <= limit) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(what, " needs ", bytes, " bytes, more than the ",
                                                   limit, " bytes of memory this process may use"));
}

}  // namespace lockstep
